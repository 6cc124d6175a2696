"""`lvu build select`: each paper's selection rules (lvu.construct.select_rules), the seeded sampling and
split (select_sampling) and the resumable build (select_pipeline) on a generated corpus
(tests/select_videos.py: durations across LongVideoBench's groups, 720p / 360p / portrait, English,
French, untagged and no subtitles, info.json with and without views / dates / labels, a broken
info.json, a file that is not a video). Offline, CPU only."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import numpy as np
import pytest
from select_videos import corpus
from typer.testing import CliRunner

from lvu.cli import app
from lvu.construct.select_pipeline import QualityModel
from lvu.construct.select_rules import BUILTIN, SelectionRules, evaluate, load_rules, rules_text
from lvu.construct.select_sampling import sample, split
from lvu.errors import LvuError


class MeanBrightness(QualityModel):
    """A tiny stand-in for a learned quality model (--quality hook): the frames' mean brightness in
    [0, 1], times `gain`."""

    def __init__(self, gain: float = 1.0) -> None:
        super().__init__(gain=gain)
        self.gain = float(gain)

    def score(self, frames: list[np.ndarray]) -> float:
        return self.gain * float(np.mean([f.mean() for f in frames]) / 255.0)


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    return corpus(tmp_path_factory.mktemp("select") / "videos", long=False)


def _select(*args: str):
    return CliRunner().invoke(app, ["build", "select", *args, "-q"])


def _said(done) -> str:
    """What a command printed, with the one-line error it stopped with (lvu's entry point prints it)."""
    return done.output + (str(done.exception) if isinstance(done.exception, LvuError) else "")


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# ---- rules as data ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_print_rules_gives_a_file_that_loads_back_the_same(tmp_path, name):
    done = CliRunner().invoke(app, ["build", "select", "--rules", name, "--print-rules"])
    assert done.exit_code == 0, done.output
    path = tmp_path / "rules.yaml"
    path.write_text(done.output)
    assert load_rules(path) == BUILTIN[name] and rules_text(load_rules(path)) == done.output


def test_builtin_values_are_the_papers():
    lvb, mme = BUILTIN["longvideobench"], BUILTIN["videomme"]
    assert [(g.min_s, g.max_s, g.target) for g in lvb.groups] == [(8, 15, 884), (15, 60, 925), (180, 600, 986),
                                                                   (900, 3600, 966)]
    assert lvb.min_short_side == 720 and lvb.quality.min_score == 0.25 and lvb.split.val == 0.2
    assert lvb.subtitles.languages == ["en"]
    assert [(g.max_s, g.target) for g in mme.groups] == [(120, 300), (900, 300), (3600, 300)]
    assert BUILTIN["lvbench"].groups[0].min_s == 1800
    neptune = BUILTIN["neptune"]
    assert neptune.truncate_seconds == 900 and neptune.min_seconds is None
    assert {(r.field, r.op, str(r.value)) for r in neptune.metadata} >= {("view_count", ">=", "100"),
                                                                          ("upload_age_days", ">=", "90")}


@pytest.mark.slow
@pytest.mark.parametrize("text, expected", [
    ("groups: [{name: a, min_s: 10, max_s: 5}]", "group a: min_s 10 is not below max_s 5"),
    ("groups: [{name: a, mins: 10}]", "groups.0.mins: Extra inputs are not permitted"),
    ("metadata: [{field: view_count, op: '=>', value: 1}]", "metadata.0.op"),
    ("[1, 2]", "expected a mapping"),
    ("groups: [", "not valid YAML/JSON"),
])
def test_bad_rule_files_are_one_line_errors_naming_the_file(tmp_path, text, expected):
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    with pytest.raises(LvuError) as e:
        load_rules(path)
    assert str(path) in str(e.value) and expected in str(e.value) and "\n" not in str(e.value)
    done = _select(str(tmp_path), "--rules", str(path), "-o", str(tmp_path / "out"))
    assert done.exit_code != 0 and expected in _said(done) and "\n" not in str(done.exception)


def _facts(duration=30.0, size=(1280, 720), subs=(), info=None, tracks=()):
    return {"probe": {"duration": duration, "width": size[0], "height": size[1], "audio": True,
                      "subtitle_tracks": list(tracks)},
            "sidecars": {"subtitles": [{"file": f"v.{t}.srt", "language": t} for t in subs], "info": info},
            "folder": "news"}


def test_evaluate_says_why_for_every_rule():
    lvb, day = BUILTIN["longvideobench"], date(2025, 1, 1)
    kept = evaluate(lvb, _facts(subs=["en"]), day)
    assert kept["keep"] and kept["group"] == "15-60s" and kept["category"] == "news"
    assert {c["rule"]: c["ok"] for c in kept["checks"]} == {"group": True, "resolution": True, "subtitles": True,
                                                            "language": True, "quality": None}
    short = evaluate(lvb, _facts(duration=5.0), day)
    assert not short["keep"] and "shorter than every group" in short["checks"][0]["reason"]
    gap = evaluate(lvb, _facts(duration=100.0), day)
    assert "in no duration group" in gap["checks"][0]["reason"]
    french = evaluate(lvb, _facts(tracks=[{"index": 2, "language": "fre"}]), day)  # an embedded track, ISO 639-2
    assert not french["keep"] and "fr is not one of en" in french["checks"][-2]["reason"]
    unknown = evaluate(lvb, _facts(), day)  # no subtitles, no language anywhere: kept, said
    line = next(c for c in unknown["checks"] if c["rule"] == "language")
    assert unknown["keep"] and line["ok"] is None and line["reason"].startswith("language unknown")
    strict = lvb.model_copy(update={"subtitles": lvb.subtitles.model_copy(update={"unknown_language": "drop"})})
    assert not evaluate(strict, _facts(), day)["keep"]
    assert evaluate(lvb, _facts(info={"language": "en"}), day)["keep"]
    low = evaluate(lvb, _facts(size=(640, 360)), day)
    assert not low["keep"] and "shorter side 360 px < 720 px" in low["checks"][1]["reason"]


def test_neptune_metadata_rules_count_upload_age_to_the_as_of_date():
    rules = BUILTIN["neptune"]
    info = {"view_count": 150, "upload_date": "20240301", "categories": ["Travel & Events"]}
    assert evaluate(rules, _facts(info=info), date(2024, 6, 1))["keep"]  # 92 days
    young = evaluate(rules, _facts(info=info), date(2024, 5, 1))  # 61 days
    assert not young["keep"] and young["category"] == "Travel & Events"
    assert next(c for c in young["checks"] if c["rule"] == "metadata:upload_age_days")["value"] == 61
    long = evaluate(rules, _facts(duration=1200.0, info=info), date(2024, 6, 1))
    assert long["keep"] and long["analysed_s"] == 900 and long["duration_s"] == 1200.0
    none = evaluate(rules, _facts(), date(2024, 6, 1))
    assert none["keep"] and [c["ok"] for c in none["checks"] if c["rule"] == "metadata"] == [None]


# ---- sampling and split ----------------------------------------------------------------------------


def _records(counts: dict[tuple[str, str], int]) -> dict[str, dict]:
    return {f"{g}-{c}-{i}": {"keep": True, "group": g, "category": c}
            for (g, c), n in counts.items() for i in range(n)}


def test_sampling_fills_targets_taking_categories_in_turn():
    rules = SelectionRules(groups=[{"name": "a", "max_s": 10, "target": 6}, {"name": "b", "min_s": 10}])
    records = _records({("a", "news"): 10, ("a", "travel"): 2, ("a", "food"): 5, ("b", "news"): 3})
    chosen = sample(records, rules, seed=0)
    picked = [vid for vid, why in chosen.items() if why is None]
    by_cat = {c: sum(vid.startswith(f"a-{c}") for vid in picked) for c in ("news", "travel", "food")}
    assert by_cat == {"news": 2, "travel": 2, "food": 2}  # round-robin, not the big category's share
    assert sum(vid.startswith("b-") for vid in picked) == 3  # no target: all of them
    assert "reached its target of 6" in chosen["a-news-0" if chosen["a-news-0"] else next(
        v for v, w in chosen.items() if w)]
    assert sample(records, rules, seed=0) == chosen and sample(records, rules, seed=1) != chosen


def test_split_is_stratified_and_seeded():
    records = _records({("a", "news"): 10, ("a", "food"): 10, ("b", "news"): 5, ("b", "food"): 25})
    splits = split(records, 0.2, seed=3)
    assert sum(s == "val" for s in splits.values()) == 10
    for key, n in (("a-news", 10), ("a-food", 10), ("b-news", 5), ("b-food", 25)):
        got = sum(splits[v] == "val" for v in splits if v.startswith(key + "-"))
        assert abs(got - n * 0.2) < 1, (key, got)
    assert split(records, 0.2, seed=3) == splits and split(records, 0.2, seed=4) != splits


# ---- the build -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_select_longvideobench_on_the_corpus(videos, tmp_path):
    out = tmp_path / "lvb"
    done = _select(str(videos), "--rules", "longvideobench", "-o", str(out), "--as-of", "2025-06-01")
    assert done.exit_code == 0, done.output
    evidence = {r["id"]: r for r in _jsonl(out / "evidence.jsonl")}
    made = {p.stem for p in videos.rglob("*.mp4")}
    assert set(evidence) == made  # one record per video, readable or not
    why = {vid: r["decision"] for vid, r in evidence.items()}
    assert why["t04"].startswith("dropped: duration 5 s is shorter than every group")
    assert why["n03"] == "dropped: subtitle language fr is not one of en"
    assert why["n04"].startswith("dropped: 640x360: shorter side 360 px < 720 px")
    assert why["x05"].startswith("dropped: unreadable video") and "x05.mp4" in why["x05"]
    assert why["t02"] == "selected"  # portrait 720x1280, no subtitles: needs ASR, said
    assert any(c["reason"].startswith("no subtitles: needs ASR") for c in evidence["t02"]["checks"])
    assert next(c for c in evidence["n02"]["checks"] if c["rule"] == "quality")["reason"] == \
        "quality: not scored (no --quality model)"
    selected = _jsonl(out / "selected.jsonl")
    assert {r["id"] for r in selected} == {v for v, r in evidence.items() if r["selected"]}
    val, test = _jsonl(out / "val.jsonl"), _jsonl(out / "test.jsonl")
    assert len(val) + len(test) == len(selected) and abs(len(val) - 0.2 * len(selected)) < 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["as_of"] == "2025-06-01" and summary["selected"] == len(selected)
    shown = CliRunner().invoke(app, ["build", "show", str(out), "n03", "--full"])
    assert shown.exit_code == 0 and "fr is not one of en" in shown.output
    # the same command again: nothing recomputed, the same files
    before = {p.name: p.read_bytes() for p in out.glob("*.jsonl")}
    again = _select(str(videos), "--rules", "longvideobench", "-o", str(out))  # as-of: the recorded date
    assert again.exit_code == 0, again.output
    assert {p.name: p.read_bytes() for p in out.glob("*.jsonl")} == before
    other = _select(str(videos), "--rules", "videomme", "-o", str(out))
    assert other.exit_code != 0 and "--replace" in _said(other) and isinstance(other.exception, LvuError)


def test_select_neptune_reads_info_json(videos, tmp_path):
    out = tmp_path / "nep"
    done = _select(str(videos), "--rules", "neptune", "-o", str(out), "--as-of", "2025-06-01")
    assert done.exit_code == 0, done.output
    why = {r["id"]: r["decision"] for r in _jsonl(out / "evidence.jsonl")}
    assert why["n05"].startswith("dropped: view_count=40 fails view_count >= 100")
    assert why["t03"].startswith("dropped: upload_age_days=") and "fails upload_age_days >= 90" in why["t03"]
    assert why["c02"].startswith("dropped: age_limit=18 fails age_limit < 18")
    assert why["c04"].startswith('dropped: safety_labels=["racy"] fails')
    c01 = next(r for r in _jsonl(out / "evidence.jsonl") if r["id"] == "c01")  # a broken info.json: one line
    assert c01["selected"] and any("c01.info.json is not valid JSON" in c["reason"] for c in c01["checks"])
    assert why["t04"] == "selected"  # 5 s: Neptune has no minimum


@pytest.mark.slow
def test_targets_and_seed_choose_balanced_samples(videos, tmp_path):
    picks = []
    for seed in (0, 0, 1):
        out = tmp_path / f"s{len(picks)}"
        done = _select(str(videos), "--rules", "videomme", "--target", "short=3", "--seed", str(seed), "-o", str(out))
        assert done.exit_code == 0, done.output
        picks.append([r["id"] for r in _jsonl(out / "selected.jsonl")])
        cats = [r["category"] for r in _jsonl(out / "selected.jsonl")]
        assert len(cats) == 3 and len(set(cats)) == 3  # one from each of three categories, not three of one
    assert picks[0] == picks[1]
    bad = _select(str(videos), "--rules", "videomme", "--target", "huge=3", "-o", str(tmp_path / "x"))
    assert bad.exit_code != 0 and "no group 'huge'" in _said(bad)


@pytest.mark.slow
def test_quality_model_hook_applies_the_threshold(videos, tmp_path):
    def quality_checks(out):
        return {r["id"]: next(c for c in r["checks"] if c["rule"] == "quality") for r in _jsonl(out / "evidence.jsonl")
                if any(c["rule"] == "quality" for c in r["checks"])}

    scorer = f"{__name__}:MeanBrightness"
    done = _select(str(videos), "--quality", scorer, "-o", str(tmp_path / "q"))
    assert done.exit_code == 0, _said(done)
    bright = quality_checks(tmp_path / "q")
    # the corpus's scenes are bright reds, greens, blues, yellows: about 0.4 of white, above 0.25
    assert bright and all(c["ok"] and 0.3 < c["score"] < 0.6 and "MeanBrightness" in c["reason"]
                          for c in bright.values())
    dim = _select(str(videos), "--quality", scorer, "--quality-arg", "gain=0.5", "-o", str(tmp_path / "q2"))
    assert dim.exit_code == 0, _said(dim)
    dark = quality_checks(tmp_path / "q2")
    assert set(dark) == set(bright) and all(c["ok"] is False and c["score"] <= 0.25 for c in dark.values())
    assert not any(r["selected"] for r in _jsonl(tmp_path / "q2" / "evidence.jsonl"))
    bad = _select(str(videos), "--quality", scorer, "--quality-arg", "unused=1", "-o", str(tmp_path / "q3"))
    assert bad.exit_code != 0 and "unused" in _said(bad) and isinstance(bad.exception, LvuError)
    unknown = _select(str(videos), "--quality", "no_such_scorer", "-o", str(tmp_path / "q4"))
    assert unknown.exit_code != 0 and "unknown quality model 'no_such_scorer'" in _said(unknown)


@pytest.mark.slow
def test_an_english_only_whisper_cannot_identify_languages(videos, tmp_path):
    pytest.importorskip("faster_whisper")
    from lvu.media.asr import default_model_dir

    model = default_model_dir()
    if not model.is_dir():
        pytest.skip("no bundled Whisper tiny.en")
    done = _select(str(videos), "--language-model", str(model), "-o", str(tmp_path / "lid"))
    assert done.exit_code != 0 and "English-only Whisper" in _said(done) and isinstance(done.exception, LvuError)


@pytest.mark.slow
def test_build_run_select_is_the_same_pipeline(videos, tmp_path):
    """`lvu build run select` with --opt: the as-of date defaults to today and is recorded."""
    done = CliRunner().invoke(app, ["build", "run", "select", str(videos), "-o", str(tmp_path / "r"), "--opt",
                                    "rules=neptune", "-q"])
    assert done.exit_code == 0, _said(done)
    config = json.loads((tmp_path / "r" / "build.json").read_text())
    assert config["options"]["as_of"] == date.today().isoformat() and config["options"]["rules"]["name"] == "neptune"
    evidence = _jsonl(tmp_path / "r" / "evidence.jsonl")
    assert not any(c["rule"] == "build" for r in evidence for c in r["checks"])  # no video failed
    assert {r["id"] for r in evidence if not r["keep"]} == {"n05", "c02", "c04", "x05", "t03"}
    # the next day (simulated: the record says an earlier date) the same command resumes with the
    # recorded date; before, `lvu build run` refused it as "option as_of: ... -> today"
    path = tmp_path / "r" / "build.json"
    path.write_text(json.dumps({**config, "options": {**config["options"], "as_of": "2025-06-01"}}))
    again = CliRunner().invoke(app, ["build", "run", "select", str(videos), "-o", str(tmp_path / "r"), "--opt",
                                     "rules=neptune", "-q"])
    assert again.exit_code == 0, _said(again)
    assert json.loads(path.read_text())["options"]["as_of"] == "2025-06-01"


def test_only_options_marked_recorded_are_taken_from_build_json(tmp_path):
    from lvu.construct.neptune import Neptune
    from lvu.construct.select_pipeline import Select
    from lvu.construct.store import recorded_options

    (tmp_path / "build.json").write_text(json.dumps({"pipeline": "select",
                                                     "options": {"as_of": "2025-06-01", "seed": 9}}))
    assert recorded_options(Select, tmp_path, {"as_of": None, "seed": 3}) == {"as_of": "2025-06-01", "seed": 3}
    assert recorded_options(Select, tmp_path, {"as_of": "2026-01-02"})["as_of"] == "2026-01-02"  # said: kept
    assert recorded_options(Neptune, tmp_path, {"as_of": None}) == {"as_of": None}  # another pipeline's record
    assert recorded_options(Select, tmp_path / "new", {"as_of": None}) == {"as_of": None}
    assert Select({}).options["as_of"] == date.today().isoformat()


def test_every_group_of_the_rules_is_in_the_summary_an_empty_one_too(videos, tmp_path):
    """Video-MME's medium and long bins get no video of this corpus: the summary and the table still
    show them with their targets (they were left out, and a target nothing reached went unseen)."""
    done = _select(str(videos), "--rules", "videomme", "-o", str(tmp_path / "vm"))
    assert done.exit_code == 0, done.output
    groups = json.loads((tmp_path / "vm" / "summary.json").read_text())["groups"]
    assert list(groups) == ["short", "medium", "long"]
    assert groups["long"] == {"target": 300, "passed": 0, "selected": 0} and groups["short"]["selected"] > 0
    assert "│ long " in done.output


@pytest.mark.slow
def test_a_selection_feeds_the_builders(videos, tmp_path):
    """`lvu build neptune OUT/selected.jsonl` (any folder-of-videos builder) takes the selected
    videos, in the selection's order; a broken line or a video gone is one line naming it."""
    from lvu.construct.pipeline import find_videos

    out = tmp_path / "sel"
    assert _select(str(videos), "--rules", "videomme", "-o", str(out)).exit_code == 0
    selected = _jsonl(out / "selected.jsonl")
    items = find_videos(out / "selected.jsonl")
    assert [(i.id, i.path) for i in items] == [(r["id"], r["path"]) for r in selected] and len(items) > 3
    assert len(find_videos(out / "selected.jsonl", limit=2)) == 2
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(selected[0]) + "\n{\"id\": \"x\"}\n")
    with pytest.raises(LvuError, match=r"broken.jsonl line 2: not a video of `lvu build select`"):
        find_videos(broken)
    gone = tmp_path / "gone.jsonl"
    gone.write_text(json.dumps({"id": "zz", "path": str(tmp_path / "zz.mp4")}) + "\n")
    with pytest.raises(LvuError, match=r"gone.jsonl line 1: .*zz.mp4 does not exist"):
        find_videos(gone)
    # the Neptune command reads it (before: "not a folder"); --limit 1 builds the first selected video
    pytest.importorskip("rapidocr", reason="the ocr captioner needs lvu[ocr]")
    done = CliRunner().invoke(app, ["build", "neptune", str(out / "selected.jsonl"), "-o", str(tmp_path / "nep"),
                                    "--captioner", "ocr", "--llm", "neptune_example:ScriptedLLM", "--limit", "1", "-q"])
    assert "not a folder" not in _said(done)
    built = json.loads((tmp_path / "nep" / "build.json").read_text())["videos"]
    assert [(v["id"], v["path"]) for v in built] == [(selected[0]["id"], selected[0]["path"])]
