"""`lvu build convert ucf-crime|ego4d-nlq`: MLVU's Anomaly Recognition and Ego Reasoning rebuilt
from the source datasets' own annotation files (fixtures in their real formats: UCF-Crime's temporal
annotation and split lists, Ego4D's nlq_val.json). One question per video / query; problems named
one line each, never fatal; decoys drawn so options alone score chance; the --llm path against the
fake OpenAI server; the output laddered and run."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lvu.benchmarks.haystack import AnswerBalancer
from lvu.benchmarks.jsonl import read_samples
from lvu.cli import app
from lvu.construct import convert_nlq
from lvu.construct.convert_common import (allocate_decoys, apart, options_only_audit, place, seeded, shown_span,
                                          span_text)
from lvu.construct.convert_ucf import CLASSES, canonical_class, readable
from lvu.construct.pipeline import Item
from lvu.errors import LvuError
from lvu.media.testing import make_video
from lvu.models.testing_server import FakeOpenAIServer
from lvu.types import Sample, VideoRef

TEMPORAL = "Temporal_Anomaly_Annotation_for_Testing_Videos.txt"
# Lines as the dataset writes them: two spaces between fields, two trailing.
TEMPORAL_LINES = ["Arrest001_x264.mp4  Arrest  10  30  -1  -1  ",         # one event: 1.0-3.0 s at 10 fps
                  "Arson011_x264.mp4  Arson  5  15  40  55  ",            # two events
                  "Normal_Videos_003_x264.mp4  Normal  -1  -1  -1  -1  ",
                  "Shooting002_x264.mp4  Shooting  1020  1100  -1  -1  ",  # no such video: reported
                  "Explosion002_x264.mp4  Explosion  3  9  -1  -1  ",      # a 2 s video: too short
                  "Burglary005_x264.mp4  Burglary  20  50  -1  -1  "]
TRAIN_LINES = ["Abuse/Abuse001_x264.mp4", "Training_Normal_Videos_Anomaly/Normal_Videos308_x264.mp4",
               "Fighting"]  # a line that is no video path: reported
CONVERTED = {"Arrest001_x264", "Arson011_x264", "Normal_Videos_003_x264", "Burglary005_x264", "Abuse001_x264",
             "Normal_Videos308_x264"}
WINDOWS = [(0.2, 1.0), (2.2, 3.0), (4.4, 5.6), (7.0, 8.0), (9.3, 10.1), (10.9, 11.5)]
QUERIES = ["Where did I put the knife?", "What did I put in the drawer?", "How many cups did I wash?",
           "Where was the red bag?", "Who did I talk to?", "What did I eat?"]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LVU_OFFLINE", "1")


@pytest.fixture(scope="module")
def ucf(tmp_path_factory) -> Path:
    """UCF-Crime's layout: test videos flat, train videos in class folders."""
    root = tmp_path_factory.mktemp("ucf")
    videos = root / "videos"
    for folder in ("Abuse", "Training_Normal_Videos_Anomaly"):
        (videos / folder).mkdir(parents=True)
    for name, seconds in (("Arrest001_x264", 6), ("Arson011_x264", 6), ("Normal_Videos_003_x264", 6),
                          ("Explosion002_x264", 2), ("Burglary005_x264", 6), ("Abuse/Abuse001_x264", 6),
                          ("Training_Normal_Videos_Anomaly/Normal_Videos308_x264", 6)):
        make_video(videos / f"{name}.mp4", seconds=seconds, fps=10, gop=10, size=(64, 48))
    (root / TEMPORAL).write_text("\n".join(TEMPORAL_LINES) + "\n")
    (root / "Anomaly_Train.txt").write_text("\n".join(TRAIN_LINES) + "\n")
    return root


def nlq_query(start: float, end: float, text: str | None, offset: float = 0.0) -> dict:
    """One language query with every field of Ego4D's nlq_<split>.json schema."""
    return {"clip_start_sec": start, "clip_end_sec": end, "video_start_sec": start + offset,
            "video_end_sec": end + offset, "video_start_frame": round((start + offset) * 30),
            "video_end_frame": round((end + offset) * 30), "template": "Objects: Where is object X before / after event Y?",
            "query": text, "slot_x": "knife", "verb_x": "put", "slot_y": None, "verb_y": None, "raw_tags": [text]}


def nlq_clip(clip_uid: str, annotation_uid: str, queries: list[dict], start: float = 0.0) -> dict:
    return {"clip_uid": clip_uid, "video_start_sec": start, "video_end_sec": start + 12, "video_start_frame": 0,
            "video_end_frame": 360, "clip_start_sec": 0, "clip_end_sec": 12.0, "clip_start_frame": 0,
            "clip_end_frame": 360, "source_clip_uid": clip_uid,
            "annotations": [{"annotation_uid": annotation_uid, "language_queries": queries}]}


@pytest.fixture(scope="module")
def nlq(tmp_path_factory) -> Path:
    """nlq_val.json: clip-aaa as a clip file (clip times, offset 100 s in its video), video-bbb as a
    full video (video times), clip-gone with no file; an out-of-range window and an empty query."""
    root = tmp_path_factory.mktemp("nlq")
    (root / "videos").mkdir()
    make_video(root / "videos" / "clip-aaa.mp4", seconds=12, fps=5, gop=10, size=(64, 48))
    make_video(root / "videos" / "video-bbb.mp4", seconds=12, fps=5, gop=10, size=(64, 48))
    first = [nlq_query(a, b, q, offset=100) for (a, b), q in zip(WINDOWS, QUERIES)]
    first += [nlq_query(3, 30, "Where is the hat?", offset=100), nlq_query(1, 2, None, offset=100)]
    data = {"version": "v2", "date": "2022-04-29", "description": "NLQ val", "manifest": "manifest.csv", "videos": [
        {"video_uid": "video-zzz", "split": "val", "clips": [nlq_clip("clip-aaa", "ann-1", first, start=100)]},
        {"video_uid": "video-bbb", "split": "val", "clips": [
            nlq_clip("clip-ccc", "ann-2", [nlq_query(a, b, q) for (a, b), q in zip(WINDOWS[:5], QUERIES)])]},
        {"video_uid": "video-gone", "split": "val", "clips": [
            nlq_clip("clip-gone", "ann-3", [nlq_query(1, 2, "Where?"), nlq_query(3, 4, "What?")])]}]}
    (root / "nlq_val.json").write_text(json.dumps(data))
    return root


def convert(*args: str) -> object:
    return CliRunner().invoke(app, ["build", "convert", *args, "-q"])


def ucf_args(ucf: Path, out: Path, *more: str) -> list[str]:
    return ["ucf-crime", str(ucf / TEMPORAL), str(ucf / "Anomaly_Train.txt"), str(ucf / "videos"), "-o", str(out),
            "--min-seconds", "4", *more]


def sentence_case(text: str) -> bool:
    return text == text[:1].upper() + text[1:].lower()


# ---- UCF-Crime -> Anomaly Recognition ----------------------------------------------------------

@pytest.mark.slow
def test_ucf_crime_gives_one_question_per_video_and_names_every_record_it_skips(ucf, tmp_path):
    done = convert(*ucf_args(ucf, tmp_path / "ar"))
    assert done.exit_code == 0, done.output
    samples, bad = read_samples(tmp_path / "ar" / "anomaly_recognition.jsonl")
    assert bad == [] and {s.id for s in samples} == CONVERTED
    by_id = {s.id: s for s in samples}
    readable_classes = {readable(c) for c in CLASSES}
    for s in samples:
        assert len(s.options) == 4 == len(set(s.options)) and set(s.options) <= readable_classes
        assert all(sentence_case(o) for o in s.options)  # never "ROAD ACCIDENTS" beside "arson"
        assert s.options[s.answer] == readable(s.extra["class"]) and s.labels["task"] == "AR"
        assert s.extra["class"] == {"Normal_Videos": "Normal"}.get(s.id[:13], re.match(r"[A-Za-z]+", s.id).group(0))
    assert by_id["Arson011_x264"].extra["evidence"] == [[0.5, 1.5], [4.0, 5.5]]  # two events, frames / 10 fps
    assert by_id["Arrest001_x264"].extra["evidence"] == [[1.0, 3.0]]
    assert by_id["Normal_Videos_003_x264"].options[by_id["Normal_Videos_003_x264"].answer] == "No anomaly"
    assert "evidence" not in by_id["Normal_Videos_003_x264"].extra
    assert by_id["Abuse001_x264"].video.path.endswith("Abuse/Abuse001_x264.mp4")  # found in its class folder
    assert by_id["Abuse001_x264"].labels["split"] == "train" and by_id["Arrest001_x264"].labels["split"] == "test"
    assert max(Counter(s.answer for s in samples).values()) <= 2  # positions balanced: 6 over 4
    # each problem: one line, the file and line, the record, what to do; the others converted
    assert f"missing: {TEMPORAL}:4: Shooting002_x264: video Shooting002_x264.mp4 not found" in done.output
    assert "skipped 1 video(s) shorter than --min-seconds 4" in done.output
    assert "bad: Anomaly_Train.txt:3: Fighting: not a split line" in done.output
    summary = json.loads((tmp_path / "ar" / "summary.json").read_text())
    assert summary["skipped"] == {"missing": 1, "short": 1, "bad": 1} and summary["converted"] == 6
    assert {p["record"] for p in summary["problems"]} == {"Shooting002_x264", "Explosion002_x264", "Fighting"}
    status = CliRunner().invoke(app, ["build", "status", str(tmp_path / "ar")])
    assert status.exit_code == 0 and "skipped (3):" in status.output
    assert "Explosion002_x264 at ucf.decoys: 2.0 s is shorter than --min-seconds 4" in status.output


def test_the_same_seed_gives_the_same_file_and_another_seed_needs_replace(ucf, tmp_path):
    out = tmp_path / "ar"
    assert convert(*ucf_args(ucf, out)).exit_code == 0
    first = (out / "anomaly_recognition.jsonl").read_bytes()
    assert convert(*ucf_args(ucf, out)).exit_code == 0 and (out / "anomaly_recognition.jsonl").read_bytes() == first
    refused = convert(*ucf_args(ucf, out, "--seed", "7"))
    assert isinstance(refused.exception, LvuError) and "option seed: 0 -> 7" in str(refused.exception)
    assert (out / "anomaly_recognition.jsonl").read_bytes() == first  # nothing changed
    assert convert(*ucf_args(ucf, out, "--seed", "7", "--replace")).exit_code == 0
    assert (out / "anomaly_recognition.jsonl").read_bytes() != first
    other = convert("ego4d-nlq", str(ucf / "Anomaly_Train.txt"), str(ucf / "videos"), "-o", str(out))
    assert isinstance(other.exception, LvuError) and "not readable JSON" in str(other.exception)
    none = convert(*ucf_args(ucf, tmp_path / "none", "--min-seconds", "400"))
    assert isinstance(none.exception, LvuError) and not (tmp_path / "none").exists()
    assert "no record could be converted (1 bad, 1 missing, 7 short)" in str(none.exception)
    assert "short: Anomaly_Train.txt:1: Abuse001_x264: 6.0 s is shorter than --min-seconds 400" in none.output


def test_class_names_read_as_the_dataset_spells_them_and_show_in_sentence_case():
    assert readable("RoadAccidents") == "Road accidents" and readable("Normal") == "No anomaly"
    assert readable("Shoplifting") == "Shoplifting"
    assert canonical_class("Road accidents") == canonical_class("road_accidents") == "RoadAccidents"
    assert canonical_class("Training_Normal_Videos_Anomaly") == "Normal" and canonical_class("Loitering") is None


@pytest.mark.slow
@pytest.mark.parametrize("kind, name, content, expected", [
    ("ucf-crime", "nlq_val.json", '{"videos": []}', "not a UCF-Crime annotation file — expected UCF-Crime's temporal"),
    ("ucf-crime", "Anomaly_Test.txt", "hello world\nthis is not it\n", "not a UCF-Crime annotation file"),
    ("ego4d-nlq", TEMPORAL, "\n".join(TEMPORAL_LINES), "not readable JSON (JSONDecodeError) — expected an Ego4D NLQ"),
    ("ego4d-nlq", "nlq_val.json", "[1, 2]", "not an Ego4D NLQ annotation file (no top-level 'videos' list)"),
    ("ego4d-nlq", "nlq_test_unannotated.json",
     json.dumps({"videos": [{"video_uid": "v", "clips": [{"clip_uid": "c", "annotations": [
         {"annotation_uid": "a", "language_queries": [{"query": "Where?"}]}]}]}]}), "no query has an answer window"),
])
def test_a_file_in_the_wrong_format_is_refused_in_one_line_naming_it(tmp_path, kind, name, content, expected):
    (tmp_path / "videos").mkdir()
    (tmp_path / name).write_text(content)
    done = subprocess.run([sys.executable, "-m", "lvu.cli", "build", "convert", kind, str(tmp_path / name),
                           str(tmp_path / "videos"), "-o", str(tmp_path / "out")], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"error: {tmp_path / name}: ")
    assert expected in done.stderr and not (tmp_path / "out").exists()


# ---- options-only leaks of the default decoys ---------------------------------------------------

def _ucf_like(naive: bool) -> list[Sample]:
    counts = {"Normal": 40, "RoadAccidents": 5, "Abuse": 12, "Arrest": 15, "Arson": 14, "Assault": 10, "Burglary": 25,
              "Explosion": 8, "Fighting": 12, "Robbery": 20, "Shooting": 9, "Shoplifting": 15, "Stealing": 18}
    truth = [c for c, n in counts.items() for _ in range(n)]
    random.Random(0).shuffle(truth)
    rng = seeded(0, "test")
    quota = {c: 1e9 if naive else 3.0 * n for c, n in counts.items()}  # naive: every class equally likely
    drawn = allocate_decoys([[c for c in CLASSES if c != t] for t in truth], quota, rng)
    balance, out = AnswerBalancer(rng), []
    for i, (t, decoys) in enumerate(zip(truth, drawn)):
        a = balance.take(4)
        out.append(Sample(id=str(i), benchmark="t", video=VideoRef(path="v.mp4"), question="?",
                          options=place(t, decoys, a, rng), answer=a))
    return out


def _nlq_like(monkeypatch, jitter: bool = True) -> list[Sample]:
    if not jitter:
        monkeypatch.setattr(convert_nlq, "jittered", lambda decoys, *args: decoys)
    rng, out, pipeline = random.Random(1), [], convert_nlq.Ego4dNlqConvert({})
    for clip in range(150):  # windows of 1-40 s (log-uniform) anywhere in an 8-minute clip, 4-14 per clip
        members = []
        for q in range(rng.randint(4, 14)):
            length = 10 ** rng.uniform(0, 1.6)
            start = rng.uniform(0, 480 - length)
            members.append(Item(f"c{clip}_{q}", "v.mp4", {
                "query": f"query {q}", "duration": 480.0, "window": [round(start, 1), round(start + length, 1)],
                "source": "t", "template": None, "video_uid": "v", "clip_uid": f"c{clip}", "annotation_uid": f"a{clip}",
                "query_index": q, "time_base": "clip"}))
        convert_nlq._decoys_for_scope(members, seeded(0, clip))
        out += [pipeline.sample(m, m.data["decoys"]) for m in members]
    return out


def prior(samples: list[Sample]) -> float:
    """% right of "the option text most often right when shown", learnt on every other question and
    scored on the rest, then swapped; k tied best options score 1/k, unseen options chance."""
    score = 0.0
    for fit, test in ((samples[0::2], samples[1::2]), (samples[1::2], samples[0::2])):
        shown = Counter(o for s in fit for o in s.options)
        right = Counter(s.options[s.answer] for s in fit)
        for s in test:
            rate = [right[o] / shown[o] if shown[o] else 0.25 for o in s.options]
            best = [i for i, r in enumerate(rate) if r == max(rate)]
            score += (s.answer in best) / len(best)
    return 100 * score / len(samples)


def test_default_decoys_leave_options_only_rules_at_chance_where_a_uniform_draw_leaks(monkeypatch):
    assert 12 < prior(_ucf_like(naive=False)) < 31  # chance 25 (19 here)
    assert prior(_ucf_like(naive=True)) > 33  # a uniform draw: the frequent classes are usually right (37)
    ladder = _nlq_like(monkeypatch)
    nlq = options_only_audit(ladder)
    assert nlq["questions"] > 1000 and 18 < prior(ladder) < 32
    assert all(21 < nlq["accuracy"][r] < 29 for r in ("longest", "shortest", "earliest", "latest")), nlq
    # without moving them, decoys are other questions' exact answers: the prior rules them out
    assert prior(_nlq_like(monkeypatch, jitter=False)) < 10
    # and the span rules see a bias when there is one: decoys always shorter than the answer
    biased = [s.model_copy(update={"options": [f"00:00–00:{(9 if i == s.answer else 2):02d}" for i in range(4)]})
              for s in ladder[:50]]
    assert options_only_audit(biased)["accuracy"]["longest"] == 100 and options_only_audit(_ucf_like(False)) == {}


# ---- Ego4D NLQ -> Ego Reasoning ------------------------------------------------------------------

def nlq_args(nlq: Path, out: Path, *more: str) -> list[str]:
    return ["ego4d-nlq", str(nlq / "nlq_val.json"), str(nlq / "videos"), "-o", str(out), *more]


@pytest.fixture(scope="module")
def er(nlq, tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("er") / "er"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LVU_CACHE_DIR", str(out.parent / "cache"))
        done = CliRunner().invoke(app, ["build", "convert", *nlq_args(nlq, out), "-q"])
    assert done.exit_code == 0, done.output
    return out, done.output


def test_ego4d_nlq_asks_which_span_answers_each_query_with_other_answers_as_decoys(er):
    out, output = er
    samples, bad = read_samples(out / "ego_reasoning.jsonl")
    assert bad == [] and {s.id for s in samples} == {f"ann-1_{i}" for i in range(6)} | {f"ann-2_{i}" for i in range(5)}
    for s in samples:
        clip = WINDOWS[:6] if s.id.startswith("ann-1") else WINDOWS[:5]
        window = clip[int(s.id.rsplit("_", 1)[1])]
        assert s.extra["evidence"] == list(window) and s.options[s.answer] == span_text(*window)
        assert s.question == f'Which part of the video answers the question "{s.extra["query"].rstrip("?")}"?'
        assert s.extra["time_base"] == ("clip" if s.id.startswith("ann-1") else "video")
        # decoys: other queries' answers of the same clip, each moved by 1-3 s where it fits
        assert len(s.extra["decoy_windows"]) == 3 and all(tuple(w) in clip and tuple(w) != window
                                                         for w in s.extra["decoy_windows"])
        spans = [tuple(p) for p in s.extra["option_spans"]]
        moved = sorted(p for i, p in enumerate(spans) if i != s.answer)
        assert all(abs(p[0] - shown_span(*w)[0]) <= 4 and abs((p[1] - p[0]) - (w[1] - w[0])) <= 2
                   for p, w in zip(moved, sorted(s.extra["decoy_windows"])))
        assert len(set(s.options)) == 4
        assert all(apart(x, y) for i, x in enumerate(spans) for y in spans[:i])  # no two name the same second
        assert s.labels["task"] == "ER" and s.extra["decoys_from"] == "other answers"
    assert "out-of-range: nlq_val.json: video video-zzz clip clip-aaa annotation ann-1 query 6: ann-1_6: window 3–30 s " \
           "ends past the video (12.0 s)" in output
    assert "missing: nlq_val.json: video video-gone clip clip-gone annotation ann-3 query 0: ann-3_0: neither " \
           "clip-gone.mp4 (the clip) nor video-gone.mp4 (the full video)" in output and "(2 records)" in output
    assert "bad: nlq_val.json: video video-zzz clip clip-aaa annotation ann-1 query 7: ann-1_7: no query text" in output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["skipped"] == {"out-of-range": 1, "missing": 2, "bad": 1}
    assert set(summary["time_span_rules"]["accuracy"]) == {"longest", "shortest", "earliest", "latest"}


def test_the_time_ladder_keeps_an_nlq_question_only_where_its_answer_window_fits(er, tmp_path):
    out, _ = er
    done = CliRunner().invoke(app, ["build", "ladder", str(out / "ego_reasoning.jsonl"), "--lengths", "6", "-o",
                                    str(tmp_path / "ladder")])
    assert done.exit_code == 0, done.output
    laddered, _ = read_samples(tmp_path / "ladder" / "ladder.jsonl")
    fits = {f"{p}_{i}@6s" for p, n in (("ann-1", 6), ("ann-2", 5)) for i in range(n) if WINDOWS[i][1] <= 6}
    assert {s.id for s in laddered} == fits and len(fits) == 6  # windows ending at 1.0, 3.0, 5.6 s: kept
    assert all(s.video.duration == 6 and s.labels["task"] == "ER" for s in laddered)


def test_lvu_run_evaluates_the_converted_files(er, ucf, tmp_path):
    out, _ = er
    assert convert(*ucf_args(ucf, tmp_path / "ar")).exit_code == 0
    for data, n in ((out / "ego_reasoning.jsonl", 11), (tmp_path / "ar" / "anomaly_recognition.jsonl", 6)):
        ran = CliRunner().invoke(app, ["run", "-b", "jsonl", "--data", str(data), "-m", "random", "--frames", "2",
                                       "--results-dir", str(tmp_path / "results"), "--no-report"])
        assert ran.exit_code == 0, ran.output
        assert f"{n} samples, 0 failed" in ran.output


# ---- --llm: the model chooses the decoys ---------------------------------------------------------

def user_text(body: dict) -> str:
    content = next(m for m in body["messages"] if m["role"] == "user")["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def ucf_llm(body: dict) -> str:
    text = user_text(body)
    cls = re.search(r'its anomaly class "(\w+)"', text).group(1)
    retry = "Your previous reply could not be read" in text
    return {"Arson": "DECOYS: Explosion, Vandalism, Burglary",
            "Arrest": "DECOYS: Assault, Fighting, Robbery" if retry else "Assault, Fighting and Robbery.",
            "Normal": "DECOYS: Loitering, Jaywalking, Littering"}.get(cls, "DECOYS: Robbery, Stealing, Shoplifting")


def chat_requests(server: FakeOpenAIServer) -> list[str]:
    return [user_text(r.body) for r in server.requests if r.path.endswith("/chat/completions")]


def llm_args(server: FakeOpenAIServer) -> list[str]:
    return ["--llm", "openai", "--llm-arg", "model=fake", "--llm-arg", f"base_url={server.base_url}",
            "--llm-arg", "cache=false"]


def test_an_llm_chooses_the_confusable_classes_and_an_unusable_reply_keeps_the_default(ucf, tmp_path):
    assert convert(*ucf_args(ucf, tmp_path / "plain")).exit_code == 0
    plain = {s.id: s for s in read_samples(tmp_path / "plain" / "anomaly_recognition.jsonl")[0]}
    with FakeOpenAIServer(answer=ucf_llm) as server:
        done = convert(*ucf_args(ucf, tmp_path / "llm", *llm_args(server)))
        assert done.exit_code == 0, done.output
        asked = chat_requests(server)
        # one per question; Arrest's first reply has no DECOYS line, each Normal reply names no class: asked twice
        assert len(asked) == 6 + 1 + 2
        assert all(p.startswith("You are helping to build a multiple-choice benchmark from the UCF-Crime") for p in asked)
        again = convert(*ucf_args(ucf, tmp_path / "llm", *llm_args(server)))
        assert again.exit_code == 0 and len(chat_requests(server)) == 9  # resumed: nothing asked again
    samples = {s.id: s for s in read_samples(tmp_path / "llm" / "anomaly_recognition.jsonl")[0]}
    assert set(samples["Arson011_x264"].options) == {"Arson", "Explosion", "Vandalism", "Burglary"}
    assert set(samples["Arrest001_x264"].options) == {"Arrest", "Assault", "Fighting", "Robbery"}
    assert set(samples["Burglary005_x264"].options) == {"Burglary", "Robbery", "Stealing", "Shoplifting"}
    for normal in ("Normal_Videos_003_x264", "Normal_Videos308_x264"):  # the default decoys, counted
        assert samples[normal].options == plain[normal].options
    summary = json.loads((tmp_path / "llm" / "summary.json").read_text())
    assert summary["decoys"] == {"llm": 4, "default (llm fallback)": 2}
    assert len(summary["llm_fallbacks"]) == 2 and "'Loitering' is not in the list" in summary["llm_fallbacks"][0]


def nlq_llm(body: dict) -> str:
    text = user_text(body)
    if '"Who did I talk to?"' in text:
        return "DECOYS: 1, 2, 99"  # outside the list, twice
    return "DECOYS: 1, 2, 3"


def test_an_llm_chooses_nlq_decoys_among_the_other_queries(nlq, tmp_path):
    with FakeOpenAIServer(answer=nlq_llm) as server:
        done = convert(*nlq_args(nlq, tmp_path / "er", *llm_args(server)))
        assert done.exit_code == 0, done.output
        asked = chat_requests(server)
    assert len(asked) == 11 + 2 and all("Below are other queries about the same video" in p for p in asked)
    samples = {s.id: s for s in read_samples(tmp_path / "er" / "ego_reasoning.jsonl")[0]}
    for sid in ("ann-1_0", "ann-2_3"):
        s = samples[sid]
        window = tuple(s.extra["evidence"])
        first3 = [list(w) for w in WINDOWS if w != window and apart(w, window)][:3]  # listed in time order
        assert s.extra["decoy_windows"] == first3 and s.options[s.answer] == span_text(*window)
        assert s.extra["decoys_from"] == "llm"
    summary = json.loads((tmp_path / "er" / "summary.json").read_text())
    assert summary["decoys"] == {"llm": 9, "other answers (llm fallback)": 2}
    assert all("'99' is not in the list" in f for f in summary["llm_fallbacks"])
    assert samples["ann-1_4"].extra["decoys_from"] == "other answers" and shown_span(9.3, 10.1) == (9, 11)


def test_the_llm_prompts_are_module_constants_printed_in_the_docs():
    from lvu.construct import convert_ucf

    docs = (Path(__file__).resolve().parents[1] / "docs" / "build.md").read_text()
    section = docs.split("## MLVU's converted tasks", 1)[1].split("\n## ", 1)[0]
    for prompt in (convert_ucf.DECOY_PROMPT, convert_nlq.DECOY_PROMPT):
        assert f"```\n{prompt}\n```" in section
    assert convert_ucf.UcfDecoys.prompt == convert_ucf.DECOY_PROMPT and convert_nlq.NlqDecoys.prompt == convert_nlq.DECOY_PROMPT
