"""`lvu review`'s API: queues per rater, every decision a rater can make (and what makes one
incomplete), versions that never overwrite, the examiner's round, the majority rule and the
agreement statistics (Fleiss' kappa checked against hand computations)."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter

import pytest

pytest.importorskip("fastapi", reason="the review app needs fastapi")
from lvu.construct.review_labels import MODALITIES  # noqa: E402
from lvu.web.review_data import load_source  # noqa: E402
from lvu.web.review_export import agreement_of, outcomes  # noqa: E402
from lvu.web.review_rules import Decision, Modality, Version, final_decision, fleiss_kappa  # noqa: E402
from review_toy import QUESTIONS, ReviewToy, accept, build, open_review, reject  # noqa: E402

DECOYS = QUESTIONS[0][3]


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> ReviewToy:
    return build(tmp_path_factory.mktemp("review"))


@pytest.fixture()
def team(toy, tmp_path):
    """alice, bob and carol rate every question; dana examines."""
    return open_review(toy.data, tmp_path / "r.sqlite", ["alice", "bob", "carol"], ["dana"], per_question=3)


def test_source_reads_what_raters_need(toy):
    source = load_source(toy.data)
    assert source.path.name == "benchmark.jsonl" and [i.id for i in source.items] == toy.ids
    first = source.items[0]
    assert first.decoys == DECOYS and first.answer == QUESTIONS[0][2] and first.needed_decoys == 4
    assert first.evidence == [(5.0, 12.0)]  # extra.evidence; the question's "00:05" lies inside it
    assert [c.text for c in first.captions][1] == "A fox walks across the stage."
    cues, problem = first.asr()
    assert problem is None and cues[0].text == "hello and welcome" and cues[0].start == 1.0
    assert source.items[2].evidence == [(1.0, 1.0)]
    plain = source.items[3]  # a plain MCQ: its wrong options are the decoys, all of them kept
    assert plain.decoys == ["none", "two", "three"] and plain.answer == "one" and plain.needed_decoys == 3
    assert tuple(Modality.__args__) == MODALITIES


@pytest.mark.parametrize("evidence, spans", [
    ([12.0, 30.0], [(12.0, 30.0)]),  # MLVU's one span
    ([[1, 2], [40, 50]], [(1.0, 2.0), (40.0, 50.0)]),
    ({"start": 3, "end": 4}, [(3.0, 4.0)]),
    ([7, 8, 9], [(7.0, 7.0), (8.0, 8.0), (9.0, 9.0)]),
    (5, [(5.0, 5.0)]),
    ("soon", []),
])
def test_evidence_in_every_documented_shape(evidence, spans):
    from lvu.types import Sample, VideoRef
    from lvu.web.review_data import evidence_of

    sample = Sample(id="x", benchmark="b", video=VideoRef(path="v.mp4"), question="What?", extra={"evidence": evidence})
    assert evidence_of(sample, "") == spans
    timed = sample.model_copy(update={"question": "What happens at 1:05 and at 0:01:41, not at 12:345?"})
    assert evidence_of(timed.model_copy(update={"extra": {}}), "at 2:00") == [(65.0, 65.0), (101.0, 101.0), (120.0, 120.0)]


def test_each_rater_gets_a_queue_in_turn(toy, tmp_path):
    review = open_review(toy.data, tmp_path / "q.sqlite", ["a", "b", "c"], per_question=2)
    queues = {who: [q["id"] for q in review.client.get("/api/queue", headers={"X-Review-Token": t}).json()]
              for who, t in review.tokens.items()}
    # question k goes to raters (2k, 2k+1) mod 3: each question twice, the load even
    assert queues == {"a": ["clip/1", "clip/2", "plain"], "b": ["clip/1", "clip/3", "plain"], "c": ["clip/2", "clip/3"]}
    again = review.store.setup(review.source, None, None, None)  # a restart keeps tokens and assignments
    assert {p.name: p.token for p in again} == review.tokens
    assert {i: set(r) for i, r in review.store.assignments().items()} == {
        i: {r for r in "abc" if i in queues[r]} for i in toy.ids}
    from lvu.errors import LvuError

    with pytest.raises(LvuError, match="--per-question 4 needs at least 4 raters"):
        review.store.setup(review.source, ["a", "b", "c"], None, 4)
    with pytest.raises(LvuError, match="rater name"):
        review.store.setup(review.source, ["a", "<b>"], None, 2)


def test_accept_with_a_corrected_answer_and_four_chosen_decoys(team):
    reply = team.post("alice", 0, accept(decoys=[5, 1, 0, 3], modality="audio+video", answer="  It crosses and leaves. "))
    assert reply.status_code == 200 and reply.json()["version"] == 1 and reply.json()["rater"] == "alice"
    [v] = team.store.versions(sample_id="clip/1")
    assert (v.rater, v.round, v.version) == ("alice", 1, 1)
    assert v.decision.answer == "It crosses and leaves." and v.decision.decoys == [5, 1, 0, 3]
    assert v.decision.modality == "audio+video" and v.decision.valuable()
    same = team.post("bob", 0, accept(answer=QUESTIONS[0][2]))  # the given answer typed again = accepted as is
    assert same.status_code == 200 and team.store.versions(rater="bob")[0].decision.answer is None


def test_written_decoys_complete_the_four(team):
    reply = team.post("alice", 0, accept(decoys=[2, 4], new_decoys=["It hides behind the stage.", "  It waves. ", ""]))
    assert reply.status_code == 200
    assert team.store.versions(rater="alice")[0].decision.new_decoys == ["It hides behind the stage.", "It waves."]
    plain = team.post("alice", 3, accept(decoys=[0, 2], new_decoys=["four"]))  # this question keeps 3
    assert plain.status_code == 200


def test_reject_needs_a_reason(team):
    refused = team.post("carol", 1, reject(reason="  "))
    assert refused.status_code == 422 and "why" in refused.json()["detail"]
    assert team.post("carol", 1, reject(reason="Two answers fit.")).status_code == 200
    assert team.store.versions(rater="carol")[0].decision.reason == "Two answers fit."


@pytest.mark.parametrize("decision, says", [
    (accept(quality={"relevant": True, "answerable": True, "unambiguous": True}), "long_context not ticked"),
    (accept(modality=None), "choose the modality"),
    (accept(decoys=[0, 1, 2]), "choose 4 decoys"),
    (accept(decoys=[0, 1, 2, 3, 4]), "choose 4 decoys"),
    (accept(decoys=[0, 1, 2, 6]), "decoys must be distinct numbers 0..5"),
    (accept(decoys=[0, 1, 1, 2]), "decoys must be distinct"),
    (accept(decoys=[0, 1, 2], new_decoys=["it sits down."]), "repeats another decoy or the answer"),
    (accept(decoys=[0, 1, 2], new_decoys=[QUESTIONS[0][2]]), "repeats another decoy or the answer"),
    (accept(quality={"pretty": True}), "unknown quality criterion 'pretty'"),
    (accept(modality="smell-only"), "modality"),
    (accept(rater="bob"), "rater"),
    (accept(answer="x" * 5000), "longer than 4000"),
    ({"status": "done"}, "status"),
])
def test_an_incomplete_decision_is_refused_saying_what_to_fix(team, decision, says):
    reply = team.post("alice", 0, decision)
    assert reply.status_code == 422 and says in reply.json()["detail"]
    assert team.store.versions() == []


def test_every_save_is_a_new_version_and_drafts_do_not_count(team):
    for decision in ({"status": "draft", "modality": "video-only"}, accept(), {"status": "draft", "note": "hmm"}):
        assert team.post("alice", 0, decision).status_code == 200
    history = team.store.versions(sample_id="clip/1", rater="alice")
    assert [(v.version, v.decision.status) for v in history] == [(1, "draft"), (2, "accepted"), (3, "draft")]
    assert history[0].created <= history[1].created <= history[2].created
    digests = {i.id: i.digest for i in team.source.items}
    assert team.store.latest(1, digests, submitted=True)["clip/1"]["alice"].version == 2  # the draft after it does not undo it
    queue = team.client.get("/api/queue", headers={"X-Review-Token": team.tokens["alice"]}).json()
    assert queue[0]["status"] == "accepted" and queue[1]["status"] is None
    page = team.get("alice", "/queue").text
    assert "1 of 4 submitted" in page and "accepted v2" in page


def test_decisions_cannot_be_overwritten_or_deleted(team):
    team.post("alice", 0, accept())
    with sqlite3.connect(team.store.path) as db:
        for sql in ("UPDATE decisions SET status = 'rejected'", "DELETE FROM decisions"):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                db.execute(sql)
    assert [v.decision.status for v in team.store.versions()] == ["accepted"]


def test_a_changed_question_no_longer_counts_earlier_decisions(toy, tmp_path):
    import shutil

    data = shutil.copytree(toy.data, tmp_path / "data", symlinks=True)
    review = open_review(data, tmp_path / "r.sqlite", ["alice"], per_question=1)
    review.post("alice", 0, accept())
    lines = (data / "benchmark.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["question"] = "What does the fox do at the end?"
    (data / "benchmark.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    changed = open_review(data, tmp_path / "r.sqlite", ["alice"], per_question=1)
    assert outcomes(changed.source, changed.store)[0][1].status == "incomplete"
    assert len(changed.store.versions()) == 1  # kept, just not counted


# ---- from several decisions to one ----------------------------------------------------------------


def _v(rater: str, decision: dict, round: int = 1) -> Version:
    return Version("clip/1", rater, round, 1, 0.0, Decision.model_validate(decision))


@pytest.fixture(scope="module")
def item(toy):
    return load_source(toy.data).items[0]


def test_the_majority_decides_decoys_by_votes(item):
    ratings = [_v("a", accept(decoys=[0, 1, 2, 3])), _v("b", accept(decoys=[5, 1, 2, 3])),
               _v("c", accept(decoys=[1, 2], new_decoys=["It hides.", "It waves."], modality="audio+video"))]
    final = final_decision(item, ratings, None, 3)
    # votes: 1 and 2 three times, 3 twice, then 0 / 5 / the written ones once: the tie goes to the first own decoy
    assert (final.status, final.source, final.modality) == ("accepted", "majority", "video-only")
    assert final.decoys == [DECOYS[1], DECOYS[2], DECOYS[3], DECOYS[0]] and final.answer == item.answer
    assert final.raters == {"a": 1, "b": 1, "c": 1}


@pytest.mark.parametrize("ratings, status, why", [
    ([accept(), reject()], "unresolved", "accept / reject"),
    ([accept(), accept(), reject()], "accepted", ""),
    ([reject(), reject(), accept()], "rejected", ""),
    ([accept(modality="video-only"), accept(modality="audio-only")], "unresolved", "modality"),
    ([accept(answer="A."), accept(answer="B."), accept()], "unresolved", "answer"),
    ([accept(answer="A."), accept(answer="A."), accept()], "accepted", ""),
    ([accept(), {"status": "draft"}], "incomplete", "1 of 2"),
])
def test_splits_are_left_to_the_examiner(item, ratings, status, why):
    final = final_decision(item, [_v(f"r{k}", d) for k, d in enumerate(ratings)], None, 2)
    assert final.status == status and why in final.why


def test_the_examiner_decides_over_the_majority(item):
    ratings = [_v("a", reject()), _v("b", reject()), _v("c", accept())]
    final = final_decision(item, ratings, _v("dana", accept(decoys=[2, 3, 4, 5], answer="It leaves."), round=2), 3)
    assert (final.status, final.source, final.answer) == ("accepted", "examiner", "It leaves.")
    assert final.decoys == DECOYS[2:] and final.raters == {"dana": 1}


def test_examiner_round_through_the_api(team):
    assert team.post("alice", 0, accept(), round=2).status_code == 403  # raters do not examine
    for who, d in (("alice", accept()), ("bob", reject()), ("carol", accept(modality="audio-only"))):
        team.post(who, 0, d)
    item = team.client.get("/api/items/0", headers={"X-Review-Token": team.tokens["dana"]}).json()
    assert item["majority"]["status"] == "unresolved" and "modality" in item["to_resolve"]
    assert set(item["ratings"]) == {"alice", "bob", "carol"}
    page = team.get("dana", "/examine/0").text
    assert "raters split on the modality" in page and "class='disagree'><th>modality" in page
    assert team.post("dana", 0, accept(modality="audio+video"), round=2).status_code == 200
    final = dict((i.id, f) for i, f in outcomes(team.source, team.store))["clip/1"]
    assert (final.status, final.source, final.modality) == ("accepted", "examiner", "audio+video")


# ---- agreement -----------------------------------------------------------------------------------------


def test_fleiss_kappa_matches_fleiss_worked_example():
    """The 10 subjects x 14 raters x 5 categories table (Fleiss 1971, as on Wikipedia): P = 0.378,
    Pe = 0.213, kappa = 0.210."""
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    stats = fleiss_kappa([Counter(dict(enumerate(row))) for row in table])
    assert stats["agreement"] == pytest.approx(0.378, abs=5e-4)
    assert stats["chance"] == pytest.approx(0.213, abs=5e-4)
    assert stats["kappa"] == pytest.approx(0.210, abs=5e-4)
    assert fleiss_kappa([Counter(a=2), Counter(a=3)])["kappa"] is None  # all the same category: undefined


def test_agreement_per_field_from_stored_decisions(team):
    """By hand, 3 raters x 4 questions. verdict: A A A | A A R | R R R | A R R -> P_i = 1, 1/3, 1, 1/3,
    P = 2/3, p(A) = p(R) = 1/2, Pe = 1/2, kappa = (2/3 - 1/2) / (1/2) = 1/3; unanimous 2 of 4.
    modality (accepting raters, questions with 2+): {AV, AV, VO} and {VO, VO}: P = (1/3 + 1) / 2 = 2/3,
    p(AV) = 2/5, p(VO) = 3/5, Pe = 13/25, kappa = (2/3 - 13/25) / (12/25) = 11/36."""
    plan = {0: [accept(modality="audio+video"), accept(modality="audio+video"), accept(modality="video-only")],
            1: [accept(), accept(), reject()],
            2: [reject(), reject(), reject()],
            3: [accept(decoys=[0, 1, 2]), reject(), reject()]}
    for n, decisions in plan.items():
        for who, d in zip(("alice", "bob", "carol"), decisions):
            assert team.post(who, n, d).status_code == 200, (n, who)
    rows = {r["field"]: r for r in agreement_of(team.source, team.store)}
    verdict = rows["verdict"]
    assert verdict["items"] == 4 and verdict["agreement_pct"] == pytest.approx(200 / 3)
    assert verdict["unanimous_pct"] == 50 and verdict["kappa"] == pytest.approx(1 / 3)
    assert rows["modality"]["items"] == 2 and rows["modality"]["kappa"] == pytest.approx(11 / 36)
    assert rows["quality: relevant"]["agreement_pct"] == pytest.approx(200 / 3)  # rejecting raters ticked none
    api = team.client.get("/api/agreement", headers={"X-Review-Token": team.tokens["dana"]}).json()
    assert api["outcomes"] == {"accepted": 2, "rejected": 2, "unresolved": 0, "incomplete": 0}
    assert {r["field"]: r["kappa"] for r in api["fields"]}["verdict"] == pytest.approx(1 / 3)
    page = team.get("dana", "/stats").text
    assert "0.333" in page and "0.306" in page


def test_the_examiner_starts_from_the_majority(team):
    for who, d in (("alice", accept(decoys=[0, 1, 2, 5], modality="audio-only")),
                   ("bob", accept(decoys=[0, 1, 2, 5], modality="audio-only", answer="It crosses.")),
                   ("carol", accept(decoys=[0, 1, 2, 5], modality="audio-only", answer="It crosses."))):
        team.post(who, 0, d)
    team.post("alice", 1, reject("too easy"))
    team.post("bob", 1, reject("no fox"))
    team.post("carol", 1, accept())
    page = team.get("dana", "/examine/0").text
    state = json.loads(page.split("id='state'>", 1)[1].split("</script>", 1)[0])
    assert state["version"] == 0 and state["saved"]["status"] == "draft"
    assert (state["saved"]["modality"], state["saved"]["answer"], state["saved"]["decoys"]) == ("audio-only", "It crosses.", [0, 1, 2, 5])
    rejected = json.loads(team.get("dana", "/examine/1").text.split("id='state'>", 1)[1].split("</script>", 1)[0])
    assert rejected["saved"]["reason"] == "too easy; no fox"


def test_a_missing_transcript_is_said_without_its_folder(tmp_path):
    from lvu.types import Sample, SubtitleRef, VideoRef
    from lvu.web.review_data import item_of

    sample = Sample(id="x", benchmark="b", video=VideoRef(path="v.mp4"), question="What?",
                    subtitles=SubtitleRef(path=str(tmp_path / "secret-dir" / "gone.srt")))
    cues, problem = item_of(0, sample).asr()
    assert cues == [] and "gone.srt" in problem and "secret-dir" not in problem
