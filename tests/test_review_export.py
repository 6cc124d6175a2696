"""`lvu review export`: the verified benchmark holds exactly the decisions — the examiner's where
there is one, else the majority's — in lvu JSONL and Neptune's schema (both load as benchmarks),
with the modality labels the MMH builder reads; and the `lvu review` commands around it."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the review app needs fastapi")
from lvu.benchmarks.jsonl import read_samples  # noqa: E402
from lvu.benchmarks.neptune_release import load_release  # noqa: E402
from lvu.construct.neptune_export import mcq_options  # noqa: E402
from lvu.construct.review_labels import mmh_candidates, rater_modality  # noqa: E402
from lvu.errors import LvuError  # noqa: E402
from lvu.web.review_export import export  # noqa: E402
from review_toy import QUESTIONS, accept, build, open_review, reject  # noqa: E402


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return build(tmp_path_factory.mktemp("review"))


@pytest.fixture()
def decided(toy, tmp_path):
    """Three raters and an examiner, one question of each outcome:
    clip/1 accepted by majority (two corrected the answer the same way, decoys by votes, audio+video);
    clip/2 rejected by majority; clip/3 split on the modality, then the examiner accepts it audio-only;
    plain: only one decision submitted (incomplete)."""
    review = open_review(toy.data, tmp_path / "r.sqlite", ["alice", "bob", "carol"], ["dana"], per_question=3)
    fixed = "The fox walks across the stage, then leaves."
    for who, d in (("alice", accept(decoys=[5, 4, 3, 2], answer=fixed, modality="audio+video")),
                   ("bob", accept(decoys=[5, 4, 1, 0], answer=fixed, modality="audio+video")),
                   ("carol", accept(decoys=[5, 4, 3, 0], modality="video-only"))):
        assert review.post(who, 0, d).status_code == 200
    for who in ("alice", "bob"):
        review.post(who, 1, reject(reason=f"{who}: ambiguous"))
    review.post("carol", 1, accept())
    for who, m in (("alice", "video-only"), ("bob", "audio-only"), ("carol", "audio+video")):
        review.post(who, 2, accept(modality=m))
    review.post("dana", 2, accept(decoys=[0, 1], new_decoys=["Good evening.", "Hello again."], modality="audio-only"),
                round=2)
    review.post("alice", 3, accept(decoys=[0, 1, 2], modality="video-only"))
    return review


def test_export_holds_exactly_the_decisions(decided, tmp_path):
    summary = export(decided.source, decided.store, tmp_path / "final")
    assert {k: summary[k] for k in ("accepted", "rejected", "unresolved", "incomplete", "neptune schema")} == {
        "accepted": 2, "rejected": 1, "unresolved": 0, "incomplete": 1, "neptune schema": 2}
    samples, bad = read_samples(tmp_path / "final" / "benchmark.jsonl")
    assert bad == [] and [s.id for s in samples] == ["clip/1", "clip/3"]
    first, third = samples
    fixed = "The fox walks across the stage, then leaves."
    assert first.options[first.answer] == fixed and first.extra["reference"] == fixed
    decoys = QUESTIONS[0][3]  # votes: 5 and 4 three times, 3 and 0 twice; the 0-3 tie keeps the LLM's order
    assert sorted(o for o in first.options if o != fixed) == sorted([decoys[5], decoys[4], decoys[0], decoys[3]])
    assert first.labels == {"question_type": "Temporal Ordering", "modality": "audio+video"}
    assert first.extra["review"] == {"source": "majority", "raters": {"alice": 1, "bob": 1, "carol": 1}}
    assert third.labels["modality"] == "audio-only" and third.extra["review"]["source"] == "examiner"
    assert set(third.options) == {"Hello and welcome.", "Goodbye.", "Good night.", "Good evening.", "Hello again."}
    raw = json.loads((tmp_path / "final" / "benchmark.jsonl").read_text().splitlines()[0])  # media linked inside FINAL
    assert raw["video"]["path"] == "videos/clip.mp4" and raw["subtitles"]["path"] == "asr/clip.srt"
    assert str((tmp_path / "final" / "videos" / "clip.mp4").resolve()) == decided.source.items[0].sample.video.path
    lines = [json.loads(x) for x in (tmp_path / "final" / "decisions.jsonl").read_text().splitlines()]
    assert [(x["id"], x["status"]) for x in lines] == [
        ("clip/1", "accepted"), ("clip/2", "rejected"), ("clip/3", "accepted"), ("plain", "incomplete")]
    assert lines[1]["reasons"] == ["alice: ambiguous", "bob: ambiguous"]
    versions = (tmp_path / "final" / "versions.jsonl").read_text().splitlines()
    assert len(versions) == len(decided.store.versions()) == 11


def test_neptune_schema_loads_as_neptune_and_feeds_the_mmh_rater_test(decided, tmp_path):
    export(decided.source, decided.store, tmp_path / "final")
    records = json.loads((tmp_path / "final" / "neptune_full.json").read_text())
    assert [r["key"] for r in records] == ["clip/1", "clip/3"]
    assert {"answer_choice_4", "answer_id", "question type", "modality", "decoys_6"} <= set(records[0])
    assert (records[0]["mcq_decoys"], records[0]["written_decoys"]) == ([4, 5, 0, 3], [])  # by votes, ties in order
    assert (records[1]["mcq_decoys"], records[1]["written_decoys"]) == ([0, 1], ["Good evening.", "Hello again."])
    samples, bad = load_release(tmp_path / "final", benchmark="neptune", subset="full")
    assert bad == [] and [s.id for s in samples] == ["clip/1", "clip/3"]
    jsonl, _ = read_samples(tmp_path / "final" / "benchmark.jsonl")
    assert [(s.options, s.answer) for s in samples] == [(s.options, s.answer) for s in jsonl]
    assert all(s.video.path.endswith("videos/clip.mp4") for s in samples)
    # MMH's rater test: not audio-only (from the JSONL labels or the Neptune records alike)
    assert [rater_modality(r) for r in records] == ["audio+video", "audio-only"]
    assert [r["key"] for r in mmh_candidates(records)] == ["clip/1"]
    mmh, _ = read_samples(tmp_path / "final" / "mmh_candidates.jsonl")
    assert [s.id for s in mmh] == ["clip/1"]


def test_kept_decoys_keep_the_builds_option_order(toy, tmp_path):
    """Raters who keep the build's first four decoys leave the MCQ as `lvu build neptune` wrote it."""
    review = open_review(toy.data, tmp_path / "r.sqlite", ["alice"], per_question=1)
    review.post("alice", 0, accept(decoys=[0, 1, 2, 3]))
    export(review.source, review.store, tmp_path / "final")
    [sample], _ = read_samples(tmp_path / "final" / "benchmark.jsonl")
    _, answer, decoys, _ = QUESTIONS[0][1:]
    assert (sample.options, sample.answer) == mcq_options("clip/1", answer, decoys)


def _lvu(*args: str):
    return subprocess.run([sys.executable, "-m", "lvu.cli", "review", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_review_commands_export_and_stats(decided, toy, tmp_path):
    db = str(decided.store.path)
    done = _lvu("export", str(toy.data), "-o", str(tmp_path / "final"), "--db", db)
    assert done.returncode == 0, done.stderr
    assert "2 accepted, 1 rejected, 0 unresolved (examiner needed), 1 incomplete" in done.stdout
    assert "lvu run -b jsonl --data" in done.stdout and (tmp_path / "final" / "neptune_full.json").is_file()
    # the verified benchmark is audited for options-only leaks, like every build's product
    leak = json.loads((tmp_path / "final" / "leak.json").read_text())
    assert leak["source"] == "benchmark.jsonl" and leak["samples"] == 2 and "leak audit" in done.stdout
    stats = _lvu("stats", str(toy.data), "--db", db)
    assert stats.returncode == 0 and "verdict" in stats.stdout and "modality" in stats.stdout
    assert "2 accepted" in stats.stdout
    partial = _lvu("export", str(toy.data), "-o", str(tmp_path / "p"), "--db", db, "--min-ratings", "1")
    assert "3 accepted" in partial.stdout  # plain's one decision now counts as a majority


@pytest.mark.slow
def test_review_of_nothing_is_a_one_line_error(tmp_path):
    done = _lvu(str(tmp_path / "missing"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no such file or folder" in done.stderr
    (tmp_path / "a.jsonl").write_text("{}\n")
    (tmp_path / "b.jsonl").write_text("{}\n")
    done = _lvu(str(tmp_path), "--port", "0")
    assert done.returncode == 2 and "pass the JSONL file" in done.stderr


def test_the_readme_examples_scripted_team(toy, tmp_path, capsys):
    """tests/review_example.py (the README's offline review) decides through the API; the export runs."""
    import shutil

    import review_example

    data = shutil.copytree(toy.data, tmp_path / "build", symlinks=True)
    review_example.main(str(data))
    assert capsys.readouterr().out.strip() == "4 questions: 4 accepted (examiner)"  # split three ways on modality
    assert export(*_opened(data), tmp_path / "final")["accepted"] == 4


def _opened(data):
    from lvu.web.review_data import default_db, load_source
    from lvu.web.review_store import ReviewStore

    return load_source(data), ReviewStore(default_db(data))


def test_lvu_build_subsets_reads_the_raters_modality(decided, toy, tmp_path):
    """MMH (lvu build subsets) leaves out what the raters marked audio-only (clip/3 here)."""
    export(decided.source, decided.store, tmp_path / "final")
    done = subprocess.run([sys.executable, "-m", "lvu.cli", "build", "subsets", str(tmp_path / "final"),
                           "--llm", "random", "-q"], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "(1 audio-only dropped)" in done.stdout
    mmh = json.loads((tmp_path / "final" / "neptune_mmh.json").read_text())
    assert {r["key"] for r in mmh} <= {"clip/1"}


# ---- #27: nothing outside FINAL, never the review's own input ----------------------------------


@pytest.mark.parametrize("hostile", ["../../victim/target", "/tmp/lvu-victim-abs", ".bashrc", "..", ""])
def test_a_video_id_from_the_data_never_names_a_file_outside_final(hostile, tmp_path):
    home = tmp_path / "home"
    (home / "victim").mkdir(parents=True)
    target = home / "victim" / "target.srt"
    target.write_text("precious")
    toy = build(tmp_path / "q", extra_rows=[{"id": "evil", "video": "videos/clip.mp4", "subtitles": "asr/clip.srt",
                                              "question": "Q?", "options": ["a", "b", "c", "d"], "answer": 0,
                                              "extra": {"video_id": hostile}}])
    review = open_review(toy.data, tmp_path / "r.sqlite", ["alice"], [], per_question=1)
    assert review.post("alice", 4, accept(decoys=[0, 1, 2])).status_code == 200
    final = home / "a" / "final"
    def files():
        return sorted(p for folder in (home, toy.data) for p in folder.rglob("*"))
    before = files()
    if hostile == "":  # no id: the video's own name is used
        export(review.source, review.store, final)
        assert (final / "asr" / "clip.srt").is_symlink()
        return
    with pytest.raises(LvuError, match=r"question evil \(extra.video_id\).*cannot name a file"):
        export(review.source, review.store, final)
    assert target.read_text() == "precious" and not target.is_symlink()
    assert not Path("/tmp/lvu-victim-abs.srt").exists()
    assert files() == before  # refused before anything was written: FINAL not even made


def test_a_symlinked_folder_inside_final_is_not_followed(decided, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "clip.srt").write_text("mine")
    export(decided.source, decided.store, tmp_path / "final")
    shutil.rmtree(tmp_path / "final" / "asr")
    (tmp_path / "final" / "asr").symlink_to(elsewhere)
    with pytest.raises(LvuError, match="leads outside"):
        export(decided.source, decided.store, tmp_path / "final")
    assert (elsewhere / "clip.srt").read_text() == "mine" and not (elsewhere / "clip.srt").is_symlink()


@pytest.mark.slow
def test_export_onto_its_own_input_is_refused_and_changes_nothing(decided, toy, tmp_path):
    files = {p: p.read_bytes() for p in toy.data.rglob("*") if p.is_file()}
    for out in (toy.data, toy.data.parent):
        done = _lvu("export", str(toy.data), "-o", str(out), "--db", str(decided.store.path))
        assert done.returncode == 2 and "holds the review's own input" in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1
    assert {p: p.read_bytes() for p in toy.data.rglob("*") if p.is_file()} == files
    assert not any(p.is_symlink() for p in toy.data.rglob("*"))


def test_export_rewrites_its_own_earlier_export_but_no_other_folder(decided, toy, tmp_path):
    first = export(decided.source, decided.store, tmp_path / "final")
    again = export(decided.source, decided.store, tmp_path / "final")  # more decisions may have come in
    assert first == again
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "benchmark.jsonl").write_text("my own\n")
    with pytest.raises(LvuError, match="not an export of a review"):
        export(decided.source, decided.store, tmp_path / "mine")
    assert (tmp_path / "mine" / "benchmark.jsonl").read_text() == "my own\n"
    other = build(tmp_path / "other")
    review = open_review(other.data, tmp_path / "o.sqlite", ["alice"], [], per_question=1)
    with pytest.raises(LvuError, match="holds the export of another review"):
        export(review.source, review.store, tmp_path / "final")


# ---- #27: the decision log cannot be rewritten unnoticed -----------------------------------------


def _sql(store, *statements):
    conn = sqlite3.connect(store.path, isolation_level=None)
    try:
        for sql in statements:
            conn.execute(sql)
    finally:
        conn.close()


def test_insert_or_replace_cannot_rewrite_a_saved_version(decided):
    rows = len(decided.store.versions())
    first = decided.store.versions()[0]
    for verb in ("INSERT OR REPLACE INTO", "REPLACE INTO"):
        for key in ("id", "sample_id, rater, round, version"):  # the same row id, or the same version key
            values = "1, 'clip/1', 'alice', 1, 1" if key == "id" else "99, 'clip/1', 'alice', 1, 1"
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                _sql(decided.store, f"{verb} decisions (id, sample_id, rater, round, version, digest, status, "
                                    f"decision, created) VALUES ({values}, 'd', 'rejected', '{{}}', 0)")
    assert len(decided.store.versions()) == rows and decided.store.versions()[0] == first
    assert decided.store.verify_log().broken is None


@pytest.mark.slow
@pytest.mark.parametrize("tamper", ["edit", "delete", "insert"])
def test_a_rewritten_log_is_reported_by_export_and_stats(decided, toy, tmp_path, tamper):
    db = str(decided.store.path)
    done = _lvu("export", str(toy.data), "-o", str(tmp_path / "final"), "--db", db)
    assert done.returncode == 0 and "decision log intact: 11 versions, hash chain verified" in done.stdout
    drop = ["DROP TRIGGER decisions_no_update", "DROP TRIGGER decisions_no_delete", "DROP TRIGGER decisions_no_replace"]
    change = {"edit": "UPDATE decisions SET status = 'rejected', decision = replace(decision, '\"accepted\"', "
                      "'\"rejected\"') WHERE id = 1",
              "delete": "DELETE FROM decisions WHERE id = 2",
              "insert": "INSERT INTO decisions (id, sample_id, rater, round, version, digest, status, decision, "
                        "created, chain) SELECT 100, sample_id, 'mallory', 1, 1, digest, status, decision, created, "
                        "chain FROM decisions WHERE id = 3"}[tamper]
    _sql(decided.store, *drop, change)
    again = _lvu("export", str(toy.data), "-o", str(tmp_path / "final"), "--db", db)
    assert again.returncode == 1 and "decision log BROKEN" in again.stdout, again.stdout + again.stderr
    stats = _lvu("stats", str(toy.data), "--db", db)
    assert "decision log BROKEN" in stats.stdout


def test_rows_removed_from_the_end_are_noticed_by_the_next_export(decided, toy, tmp_path):
    export(decided.source, decided.store, tmp_path / "final")
    _sql(decided.store, "DROP TRIGGER decisions_no_delete", "DELETE FROM decisions WHERE id >= 10")
    assert decided.store.verify_log().broken is None  # the chain alone cannot see a shorter tail
    summary = export(decided.source, decided.store, tmp_path / "final")
    assert "gone or changed" in summary["log"].broken
    assert "gone or changed" in export(decided.source, decided.store, tmp_path / "final")["log"].broken  # still
