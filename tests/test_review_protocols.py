"""Review protocols (`lvu review --protocol`): the built-ins as the papers describe them, protocol
files and their one-line errors, the protocol stored with the review, the chain rule (writer ->
examiner -> reviser), every edit a role may and may not make, `reviewed_samples` under any
protocol, and the per-protocol exports (LongVideoBench's release layout runs with `lvu run`)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi", reason="the review app needs fastapi")
from lvu.benchmarks.jsonl import read_samples  # noqa: E402
from lvu.errors import LvuError  # noqa: E402
from lvu.web.review_chain import EditDecision, check_edit  # noqa: E402
from lvu.web.review_data import load_source  # noqa: E402
from lvu.web.review_export import reviewed_samples  # noqa: E402
from lvu.web.review_protocols import BUILT_IN, LVB_CATEGORIES, load_protocol  # noqa: E402
from lvu.web.review_rules import DecisionError  # noqa: E402
from lvu.web.review_store import ReviewStore  # noqa: E402
from review_toy import QUESTIONS, accept, build, open_review, reject  # noqa: E402


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return build(tmp_path_factory.mktemp("protocols"))


def chain_review(toy, db, protocol: str, people: dict[str, list[str]] | None = None):
    """A chain review over the toy, opened as `lvu review --protocol` opens it."""
    source = load_source(toy.data)
    store = ReviewStore(db)
    chosen = store.protocol(load_protocol(protocol), record=True)
    persons = store.setup_chain(source, chosen, people or {})
    return source, store, chosen, {p.name: p for p in persons}


def save(store, protocol, source, n: int, person: str, round: int, **decision):
    """Check a decision as the app does (against the rounds before it) and store it."""
    from lvu.web.review_chain import before_round
    from lvu.web.review_export import chain_outcomes

    item = source.items[n]
    role = protocol.role(round)
    digests = {i.id: i.digest for i in source.items}
    latest = {r: max(store.latest(r, digests, submitted=True).get(item.id, {}).values(), key=lambda v: v.created)
              for r in range(1, round) if store.latest(r, digests, submitted=True).get(item.id)}
    base = before_round(item, protocol, latest, round)
    d = check_edit(EditDecision.model_validate(decision), item, protocol, role, base)
    assert chain_outcomes  # imported: the module under test
    return store.save(item, person, round, d)


# ---- reviewed_samples ------------------------------------------------------------------------------


def test_reviewed_samples_under_neptune(toy, tmp_path):
    db = tmp_path / "r.sqlite"
    review = open_review(toy.data, db, ["alice", "bob", "carol"], ["dana"], per_question=3)
    for who in ("alice", "bob", "carol"):
        assert review.post(who, 0, accept(answer="It crosses the stage.")).status_code == 200
        assert review.post(who, 1, reject("the stage is never empty")).status_code == 200
    assert review.post("alice", 2, accept()).status_code == 200  # 1 of 3: not decided yet
    out = reviewed_samples(toy.data, db)
    assert [r["id"] for r in out.accepted] == ["clip/1"]
    record = out.accepted[0]
    assert record["options"][record["answer"]] == "It crosses the stage."  # the raters' correction
    assert sorted(record["options"]) == sorted(["It crosses the stage.", *QUESTIONS[0][3][:4]])
    assert out.rejected == {"clip/2": "the stage is never empty"}
    assert out.pending == ["clip/3", "plain"]
    samples, bad = read_samples_of(tmp_path, out.accepted)
    assert not bad and samples[0].question == QUESTIONS[0][1]


def read_samples_of(tmp_path, records):
    path = tmp_path / "accepted.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return read_samples(path)


def test_reviewed_samples_under_videomme_revise(toy, tmp_path):
    db = tmp_path / "rev.sqlite"
    source, store, protocol, people = chain_review(toy, db, "videomme-revise")
    assert [p.name for p in people.values()] == ["reviser1"] and people["reviser1"].roles == "reviser"
    plain = next(i.ordinal for i in source.items if i.id == "plain")
    save(store, protocol, source, plain, "reviser1", 1, status="accepted",
         question="How many foxes cross the stage between 00:05 and 00:12?",
         options=["none", "one", "two", "three", "four"], answer="one")
    save(store, protocol, source, 1, "reviser1", 1, status="rejected", reason="a text-only model knows it")
    save(store, protocol, source, 2, "reviser1", 1, status="draft", question="half done")
    out = reviewed_samples(toy.data, db)
    assert [r["id"] for r in out.accepted] == ["plain"]
    record = out.accepted[0]
    assert record["question"].startswith("How many foxes cross")
    assert record["options"] == ["none", "one", "two", "three", "four"] and record["answer"] == 1
    assert record["extra"]["review"] == {"protocol": "videomme-revise", "source": "reviser", "raters": {"reviser1": 1}}
    assert out.rejected == {"clip/2": "a text-only model knows it"}
    assert out.pending == ["clip/1", "clip/3"]  # a draft is no decision
    samples, bad = read_samples_of(tmp_path, out.accepted)
    assert not bad and samples[0].answer == 1 and samples[0].id == "plain"


def test_reviewed_samples_of_a_review_never_started(toy, tmp_path):
    db = tmp_path / "none.sqlite"
    out = reviewed_samples(toy.data, db)
    assert out.accepted == [] and out.rejected == {} and out.pending == toy.ids
    assert not db.exists()


def test_reviser_may_only_edit_what_the_protocol_lets_it(toy, tmp_path):
    source, store, protocol, _ = chain_review(toy, tmp_path / "r.sqlite", "videomme-revise")
    with pytest.raises(DecisionError, match="may not edit category"):
        save(store, protocol, source, 0, "reviser1", 1, status="draft", category="Counting Problem")
    with pytest.raises(DecisionError, match="mark which option is correct"):
        save(store, protocol, source, 3, "reviser1", 1, status="accepted", options=["a", "b", "c", "d"])
    with pytest.raises(DecisionError, match="why the question is rejected"):
        save(store, protocol, source, 3, "reviser1", 1, status="rejected")
    with pytest.raises(DecisionError, match="distinct"):
        save(store, protocol, source, 3, "reviser1", 1, status="accepted", options=["a", "A", "c"], answer="c")


# ---- protocols: built-ins, files, stored with the review ---------------------------------------------


def test_built_ins_follow_the_papers():
    lvb = BUILT_IN["longvideobench"]
    assert [r.name for r in lvb.roles] == ["writer", "examiner", "reviser"]
    assert len(lvb.categories) == 17
    assert sum(v == "L1-Perception" for v in lvb.levels.values()) == 8
    assert sum(v == "L2-Relation" for v in lvb.levels.values()) == 9
    from lvu.benchmarks.longvideobench_ref import CATEGORIES

    assert tuple(LVB_CATEGORIES) == CATEGORIES  # Table 7's order, the loader's codes
    assert {"question", "category"} <= set(lvb.roles[1].edits) and {"question", "category"} <= set(lvb.roles[2].edits)
    assert {"referring_query", "referred_moments"} <= set(lvb.roles[0].edits)
    assert lvb.roles[2].after == "rejected" and lvb.roles[1].after == "accepted"
    assert set(BUILT_IN["videomme"].criteria) == {"language", "answerable", "options"}
    assert set(BUILT_IN["videomme-revise"].roles[0].edits) == {"question", "options", "answer"}
    from lvu.web.review_rules import CRITERIA

    assert BUILT_IN["neptune"].criteria == CRITERIA and BUILT_IN["neptune"].rule == "majority"


def test_protocol_files_and_their_errors(tmp_path):
    good = tmp_path / "mine.yaml"
    good.write_text("name: mine\ncriteria: {clear: It is clear}\nroles:\n  - {name: checker, edits: [quality, question]}\n")
    mine = load_protocol(good)
    assert mine.name == "mine" and mine.roles[0].edits == ["quality", "question"] and mine.rule == "chain"
    as_json = tmp_path / "mine.json"
    as_json.write_text(mine.model_dump_json())
    assert load_protocol(as_json).digest() == mine.digest()
    cases = {
        "unknown.yaml": ("name: x\nroles: [{name: a, edits: [colour]}]\n", "roles.0.edits.0"),
        "broken.yaml": ("name: [x\n", "not valid YAML"),
        "list.json": ("[1, 2]", "a protocol is a mapping"),
        "majority.yaml": ("name: x\nrule: majority\nroles: [{name: a, people: 3, edits: [question]}]\n",
                          "majority rule is Neptune's"),
        "first.yaml": ("name: x\nroles: [{name: a, after: rejected}]\n", "drop its `after`"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(LvuError, match=message) as caught:
            load_protocol(tmp_path / name)
        assert "\n" not in str(caught.value) and name in str(caught.value)
    with pytest.raises(LvuError, match="neither a built-in"):
        load_protocol("nope")


def test_the_protocol_is_stored_and_a_different_one_refused(toy, tmp_path):
    db = tmp_path / "r.sqlite"
    chain_review(toy, db, "longvideobench")
    again = ReviewStore(db)
    assert again.protocol().name == "longvideobench"  # a later start without --protocol keeps it
    with pytest.raises(LvuError, match="runs the 'longvideobench' protocol") as caught:
        again.protocol(load_protocol("videomme"), record=True)
    assert "\n" not in str(caught.value)
    # a Neptune review from before protocols were stored is Neptune's
    old = tmp_path / "old.sqlite"
    review = open_review(toy.data, old, ["alice"], per_question=1)
    assert review.post("alice", 0, accept()).status_code == 200
    with pytest.raises(LvuError, match="runs the 'neptune' protocol"):
        ReviewStore(old).protocol(load_protocol("longvideobench"))


# ---- the chain app: LongVideoBench's writer -> examiner -> reviser -------------------------------------


def lvb_team(toy, db):
    from fastapi.testclient import TestClient

    from lvu.web.review_app import create_review_app

    source, store, protocol, people = chain_review(
        toy, db, "longvideobench", {"writer": ["ann"], "examiner": ["eve"], "reviser": ["rob"]})
    client = TestClient(create_review_app(source, store), base_url="http://127.0.0.1:8766")
    tokens = {n: p.token for n, p in people.items()}

    def post(who, n, round, headers=(), **decision):
        return client.post(f"/api/items/{n}/decision?round={round}", json=decision,
                           headers={"X-Review-Token": tokens[who], **dict(headers)})

    def get(who, url):
        return client.get(f"{url}{'&' if '?' in url else '?'}t={tokens.get(who, 'no-such-token')}")
    return source, store, post, get


QUESTION = QUESTIONS[0][1]  # "What does the fox do after it enters at 00:05?"
QUERY = (QUESTION.index("after it enters"), QUESTION.index("after it enters") + len("after it enters at 00:05"))


def written(**more):
    return {"status": "accepted", "category": "E3E", "referring_query": list(QUERY),
            "referred_moments": [[5.0, 7.5]], **more}


def test_longvideobench_chain_through_the_app(toy, tmp_path):
    source, store, post, get = lvb_team(toy, tmp_path / "lvb.sqlite")
    # the examiner and reviser cannot act before the writer
    assert post("eve", 0, 2, status="accepted").status_code == 409
    assert post("rob", 0, 3, status="accepted").status_code == 409
    assert post("ann", 0, 2, status="accepted").status_code == 403  # not an examiner
    # the writer must highlight the query, mark a moment and choose a category
    r = post("ann", 0, 1, status="accepted", category="E3E", referred_moments=[[5.0, 7.5]])
    assert r.status_code == 422 and "referring query" in r.json()["detail"]
    r = post("ann", 0, 1, status="accepted", category="E3E", referring_query=list(QUERY))
    assert r.status_code == 422 and "referred moment" in r.json()["detail"]
    assert post("ann", 0, 1, **written(category="XYZ")).status_code == 422
    assert post("ann", 0, 1, **written(referring_query=[5, 999])).status_code == 422
    assert post("ann", 0, 1, **written(referred_moments=[[8.0, 3.0]])).status_code == 422
    assert post("ann", 0, 1, **written()).status_code == 200
    assert post("ann", 1, 1, **written(referring_query=[0, 4], category="S2O")).status_code == 200
    assert post("ann", 2, 1, status="rejected", reason="the video is still frames").status_code == 200
    # the examiner sees the highlight; may edit the question and category but not the moments
    page = get("eve", "/item/0?round=2")
    assert page.status_code == 200 and "<mark id=referring-query>after it enters at 00:05</mark>" in page.text
    assert "mark-start" not in page.text and "edit-question" in page.text
    assert post("eve", 0, 2, status="draft", referred_moments=[[1.0, 2.0]]).status_code == 422
    assert post("eve", 2, 2, status="accepted").status_code == 409  # the writer rejected it: final
    new_question = "Right after the fox enters at 00:05, what does it do?"
    assert post("eve", 0, 2, status="rejected", question=new_question, category="E2O",
                reason="the options need work").status_code == 200
    assert post("eve", 1, 2, status="accepted").status_code == 200
    # the reviser gets only what the examiner rejected
    assert post("rob", 1, 3, status="accepted").status_code == 409
    queue = get("rob", "/queue").text
    assert "clip/1" in queue and "clip/2" not in queue
    page = get("rob", "/item/0?round=3")
    assert new_question in page.text and "the options need work" in page.text
    options = [*source.items[0].sample.options[:3], "It walks across the stage and then leaves it."]
    r = post("rob", 0, 3, status="accepted", options=options, answer=options[3])
    assert r.status_code == 422 and "highlight the referring query" in r.json()["detail"]  # its words were edited away
    query = [new_question.index("after the fox"), new_question.index(", what")]
    assert post("rob", 0, 3, status="accepted", options=options, answer=options[3], referring_query=query).status_code == 200
    out = reviewed_samples(toy.data, store.path)
    assert sorted(r["id"] for r in out.accepted) == ["clip/1", "clip/2"]
    first = next(r for r in out.accepted if r["id"] == "clip/1")
    assert first["question"] == new_question and first["labels"]["question_category"] == "E2O"
    assert first["labels"]["level"] == "L1-Perception"
    span = first["extra"]["referring_query"]
    assert new_question[span[0]:span[1]] == "after the fox enters at 00:05"
    assert first["extra"]["question_wo_referring_query"] == "Right, what does it do?"
    assert first["options"] == options and first["answer"] == 3
    assert first["extra"]["referred_moments"] == [[5.0, 7.5]]
    assert first["extra"]["review"]["raters"] == {"ann": 1, "eve": 1, "rob": 1}
    assert out.rejected == {"clip/3": "the video is still frames"} and out.pending == ["plain"]


def test_an_edited_question_keeps_its_referring_query_where_its_words_are(toy):
    from lvu.web.review_chain import Annotation, applied

    base = Annotation("What does the fox do at 00:05?", ["a", "b"], "a", "E3E", (10, 17), [])
    moved = applied(base, EditDecision(status="draft", question="Tell me: what does the fox do at 00:05?"))
    assert moved.question[moved.referring_query[0]:moved.referring_query[1]] == "the fox"
    gone = applied(base, EditDecision(status="draft", question="What does the cat do?"))
    assert gone.referring_query is None
    assert applied(base, EditDecision(status="draft", question=base.question)).referring_query == (10, 17)


@pytest.mark.slow
def test_longvideobench_export_runs_with_the_longvideobench_loader(toy, tmp_path):
    import subprocess
    import sys

    source, store, post, get = lvb_team(toy, tmp_path / "lvb.sqlite")
    assert post("ann", 0, 1, **written()).status_code == 200
    assert post("ann", 1, 1, **written(referring_query=[0, 4], category="S2O", referred_moments=[[0.0, 5.0], [12.0, 14.0]])).status_code == 200
    assert post("eve", 0, 2, status="accepted").status_code == 200
    assert post("eve", 1, 2, status="accepted", category="SSS").status_code == 200
    final = tmp_path / "final"
    done = subprocess.run([sys.executable, "-m", "lvu.cli", "review", "export", str(toy.data), "-o", str(final),
                           "--db", str(store.path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "longvideobench protocol: 2 accepted, 0 rejected, 2 pending" in done.stdout
    assert "lvb_val.json: 2 questions; run it: lvu run -b longvideobench --data" in done.stdout
    assert json.loads((final / "leak.json").read_text())["samples"] == 2  # audited like every build
    records = json.loads((final / "lvb_val.json").read_text())
    by_id = {r["id"]: r for r in records}
    one, two = by_id["clip/1"], by_id["clip/2"]
    assert one["question_category"] == "E3E" and one["level"] == "L2-Relation"
    assert two["question_category"] == "SSS" and two["level"] == "L2-Relation"  # the examiner's category
    assert one["question_wo_referring_query"] == "What does the fox do?"
    assert one["candidates"][one["correct_choice"]] == QUESTIONS[0][2]
    assert one["position"] == [62] and two["position"] == [25, 130]  # middle frames at 10 fps
    assert one["duration_group"] == 60 and one["duration"] == pytest.approx(20.0, abs=0.2)
    cues = json.loads((final / "subtitles" / one["subtitle_path"]).read_text())
    assert cues[0] == {"timestamp": [1.0, 3.0], "text": "hello and welcome"}
    run = subprocess.run([sys.executable, "-m", "lvu.cli", "run", "-b", "longvideobench", "--data", str(final),
                          "-m", "random", "--results-dir", str(tmp_path / "res"), "--no-report"],
                         capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "LVU_OFFLINE": "1", "LVU_CACHE_DIR": str(tmp_path / "c")})
    assert run.returncode == 0, run.stdout + run.stderr
    from lvu.benchmarks.longvideobench import LongVideoBench

    loaded, bad = LongVideoBench(data=str(final)).load()
    samples = {s.id: s for s in loaded}
    assert not bad and sorted(samples) == ["clip/1", "clip/2"]
    assert "2 samples, 0 failed" in run.stdout and "L2-Relation" in run.stdout
    assert samples["clip/1"].labels["question_category"] == "E3E" and samples["clip/1"].extra["position"] == [62]


@pytest.mark.slow
def test_cli_refuses_an_unknown_or_different_protocol_in_one_line(toy, tmp_path):
    import subprocess
    import sys

    db = tmp_path / "r.sqlite"
    chain_review(toy, db, "videomme-revise")

    def lvu(*args):
        return subprocess.run([sys.executable, "-m", "lvu.cli", "review", *args], capture_output=True, text=True,
                              timeout=120)
    unknown = lvu(str(toy.data), "--protocol", "nope", "--db", str(tmp_path / "other.sqlite"), "--port", "0")
    assert unknown.returncode != 0 and unknown.stderr.count("\n") == 1 and "neither a built-in" in unknown.stderr
    other = lvu(str(toy.data), "--protocol", "longvideobench", "--db", str(db), "--port", "0")
    assert other.returncode != 0 and other.stderr.count("\n") == 1
    assert "runs the 'videomme-revise' protocol" in other.stderr
    stats = lvu("stats", str(toy.data), "--db", str(db))
    assert stats.returncode == 0 and "videomme-revise protocol: 0 accepted, 0 rejected, 4 pending" in stats.stdout


def test_chain_app_keeps_the_security_rules(toy, tmp_path):
    source, store, post, get = lvb_team(toy, tmp_path / "s.sqlite")
    hostile = "<script>alert(1)</script> what does the fox do?"
    assert post("ann", 0, 1, **written(question=hostile, referring_query=[0, 25])).status_code == 200
    page = get("eve", "/item/0?round=2").text
    assert "<script>alert" not in page and "<mark id=referring-query>&lt;script&gt;alert(1)&lt;/script&gt;</mark>" in page
    foreign = post("ann", 1, 1, headers={"Origin": "http://evil.example"}, **written())
    assert foreign.status_code == 403 and "cross-origin" in foreign.json()["detail"]
    assert get("rob", "/item/1?round=1").status_code == 403  # not the writer of question 2
    assert get("rob", f"/video/{source.items[0].video_key}").status_code == 200  # a reviser sees every question's video
    assert get("ann", "/queue").status_code == 200 and get("nobody", "/queue").status_code == 403
