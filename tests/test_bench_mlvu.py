"""MLVU: loaders for the official layouts, prompts pinned byte for byte, the official check_ans
with its quirks, M-Avg / G-Avg and the harness deviations, generation plumbing, test submissions."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from lvu.benchmarks import mlvu
from lvu.benchmarks.mlvu import HUB_REVISION, Mlvu, mlvu_indices, qa_template
from lvu.benchmarks.mlvu_vlmevalkit import CAN_INFER
from lvu.scoring.vlmevalkit import UNMATCHED
from lvu.errors import LvuError
from lvu.models.base import Model, register_model
from lvu.api import run
from lvu.runs.engine import score_saved, video_meta
from lvu.types import Frame, Response, SampleResult

NEEDLE_Q = "Where is the senior businessman having a serious conversation on the cell phone?"
NEEDLE_OPTS = ["In a park", "By the sea shore", "In his office", "At a restaurant"]


def mc(video, qt, question, cands, answer, **kw):
    return {"video": video, "duration": 3.0, "question": question, "candidates": cands, "answer": answer,
            "question_type": qt, **kw}


DEV = {
    "1_plotQA": [mc("movie101_66.mp4", "plotQA", "What color is the main male character in the video?",
                    ["Yellow", "Red", "Green", "Blue"], "Yellow"),
                 mc("movie101_67.mp4", "plotQA", "What color is the car?", ["Red", "Blue", "Red", "Green"], "Red")],
    "2_needle": [mc("needle_1.mp4", "findNeedle", NEEDLE_Q, NEEDLE_OPTS, "By the sea shore")],
    "3_ego": [mc("ego_1.mp4", "ego", "What did I put in the drawer?", ["keys", "a cup", "a pen", "scissors"], "scissors")],
    "4_count": [mc("count_1.mp4", "count", "How many times does the juggling action appear?", ["1", "2", "3", "4"], "3")],
    "5_order": [mc("order_1.mp4", "order", "Arrange the actions in order.",
                   ["abseiling --> making jewelry", "making jewelry --> abseiling", "a", "b"],
                   "abseiling --> making jewelry")],
    "6_anomaly_reco": [mc("surveil_1.mp4", "anomaly_reco", "Is there anything unusual in this surveillance video?",
                          ["Normal", "Fighting", "Arson", "Robbery"], "Arson")],
    "7_topic_reasoning": [mc("topic_1.mp4", "topic_reasoning", "What type of film is this?",
                             ["Mystery", "Action", "Comedy", "Romance"], "Romance")],
    "8_sub_scene": [{"video": "subPlot_new_all_126.mp4", "duration": 3.0, "question_type": "subPlot",
                     "question": "Please describe the scene when the man leads the players into the golf course.",
                     "answer": "The man leads the players with a swagger.",
                     "scoring_points": ["The man leads the players with a swagger", "A man in a suit runs"]}],
    "9_summary": [{"video": "summary_1.mp4", "duration": 3.0, "question_type": "summary",
                   "question": "Please summarize this video, including its main content.",
                   "answer": "This is a documentary about forest animals."}],
}
DEV_IDS = ["PQA_0", "PQA_1", "NQA_0", "ER_0", "AC_0", "AO_0", "AR_0", "TR_0", "SSC_0", "VS_0"]


def write_release(root: Path, video: Path, files: dict, *, folder=lambda stem, rec: stem) -> Path:
    """The hub snapshot layout: root/MLVU/json/<stem>.json and root/MLVU/video/<folder>/<video>."""
    (root / "MLVU" / "json").mkdir(parents=True, exist_ok=True)
    for stem, records in files.items():
        (root / "MLVU" / "json" / f"{stem}.json").write_text(json.dumps(records), encoding="utf-8")
        for r in records:
            if isinstance(r, dict) and r.get("video"):
                dest = root / "MLVU" / "video" / folder(stem, r)
                dest.mkdir(parents=True, exist_ok=True)
                shutil.copy(video, dest / r["video"])
    return root


@pytest.fixture()
def video(tmp_video):
    return tmp_video(seconds=3, fps=10, gop=10, size=(64, 48))  # 30 frames


@pytest.fixture()
def root(tmp_path, video):
    return write_release(tmp_path / "rel", video.path, DEV)


def by_id(samples):
    return {s.id: s for s in samples}


# ---- loading ------------------------------------------------------------------------------------


def test_loads_the_official_layout(root):
    samples, bad = Mlvu(data=str(root)).load()
    assert bad == [] and [s.id for s in samples] == DEV_IDS  # file order 1_plotQA … 9_summary
    s = by_id(samples)
    assert s["PQA_0"].video.path == str(root / "MLVU" / "video" / "1_plotQA" / "movie101_66.mp4")
    assert (s["PQA_0"].answer, s["NQA_0"].answer, s["AC_0"].answer, s["TR_0"].answer) == (0, 1, 2, 3)
    assert s["NQA_0"].labels == {"task": "NQA", "question_type": "findNeedle", "group": "Single Detail"}
    # duplicate candidates: the official loop keeps the LAST equal candidate (C), VLMEvalKit's judge input the first
    assert (s["PQA_1"].answer, s["PQA_1"].extra["answer_letter"], s["PQA_1"].extra["answer_first"]) == (2, "C", "A")
    ssc, vs = s["SSC_0"], s["VS_0"]
    assert ssc.options == [] and ssc.answer.startswith("The man leads") and len(ssc.extra["scoring_points"]) == 2
    assert vs.labels["task"] == "VS" and vs.video.duration == 3.0 and "scoring_points" not in vs.extra


def test_other_layouts_and_video_folders(tmp_path, root, video):
    ids = [s.id for s in Mlvu(data=str(root / "MLVU")).load()[0]]
    assert ids == DEV_IDS and [s.id for s in Mlvu(data=str(root / "MLVU" / "json")).load()[0]] == DEV_IDS
    one = Mlvu(data=str(root / "MLVU" / "json" / "2_needle.json")).load()[0]  # one file: task from question_type
    assert [x.id for x in one] == ["NQA_0"] and Path(one[0].video.path).exists()
    # the repo's older MLVU_all layout names video folders by task key (plotQA, needle, subPlot, …)
    old = write_release(tmp_path / "old", video.path, DEV, folder=lambda stem, r: mlvu.FOLDERS.get(
        mlvu.BY_TYPE[r["question_type"]].code, r["question_type"]))
    samples = Mlvu(data=str(old)).load()[0]
    assert all(Path(x.video.path).exists() for x in samples)
    assert by_id(samples)["NQA_0"].video.path.endswith("video/needle/needle_1.mp4")
    # the GitHub data/ folder (annotations only) with a flat --video-dir
    (tmp_path / "data").mkdir()
    (tmp_path / "flat").mkdir()
    shutil.copy(root / "MLVU" / "json" / "3_ego.json", tmp_path / "data")
    shutil.copy(video.path, tmp_path / "flat" / "ego_1.mp4")
    b = Mlvu(data=str(tmp_path / "data"), video_dir=str(tmp_path / "flat"), tasks="ER")
    (ego,), bad = b.load()
    assert bad == [] and ego.video.path == str(tmp_path / "flat" / "ego_1.mp4")


def test_hub_rows_go_through_the_same_mapper(root, monkeypatch):
    calls = []

    def load_dataset(name, data_files, revision):
        calls.append((name, data_files, revision))
        rows = {}
        for stem, recs in DEV.items():  # hub schema: one table, absent fields come back as None
            rows[stem] = [{"candidates": None, "scoring_points": None, **r} for r in recs]
        return rows

    monkeypatch.delenv("LVU_OFFLINE", raising=False)
    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    video_dir = root / "MLVU" / "video"
    hub, bad = Mlvu(data="hf:", video_dir=str(video_dir)).load()
    assert bad == [] and calls[0][0] == "MLVU/MVLU" and calls[0][2] == HUB_REVISION
    assert calls[0][1]["1_plotQA"] == "MLVU/json/1_plotQA.json" and len(calls[0][1]) == 9
    local = Mlvu(data=str(root)).load()[0]
    assert [h.model_dump() for h in hub] == [x.model_dump() for x in local]  # same ids, answers, paths
    monkeypatch.setenv("LVU_OFFLINE", "1")
    with pytest.raises(LvuError, match="LVU_OFFLINE is set"):
        Mlvu().load()
    monkeypatch.setitem(sys.modules, "datasets", None)  # not installed
    with pytest.raises(LvuError, match=r"pip install 'lvu\[hub\]'"):
        Mlvu(data="hf:").load()


def test_bad_records_name_file_record_and_fix(tmp_path, video):
    q = mc("movie101_66.mp4", "plotQA", "Q?", ["a", "b", "c", "d"], "a")
    files = {
        "1_plotQA": [q, ["not", "an", "object"], {**q, "question": ""}, {**q, "candidates": "a b"},
                     {**q, "answer": "z"}, {**q, "duration": "long"}, {k: v for k, v in q.items() if k != "answer"}],
        "8_sub_scene": [{**DEV["8_sub_scene"][0], "scoring_points": []}],
    }
    root = write_release(tmp_path / "bad", video.path, files)
    (root / "MLVU" / "json" / "3_ego.json").write_text("{", encoding="utf-8")
    (root / "MLVU" / "json" / "4_count.json").write_text("{}", encoding="utf-8")
    samples, bad = Mlvu(data=str(root)).load()
    assert [s.id for s in samples] == ["PQA_0", "PQA_4"]  # ids keep record positions; 'z' is not a candidate
    errors = {b.id: b.error for b in bad}
    assert all(" — " in e for e in errors.values()), errors
    assert "1_plotQA.json record 2: a JSON list, not an object" in errors["1_plotQA.json record 2"]
    assert "'question' is missing or empty" in errors["1_plotQA.json record 3"]
    assert "candidates must be a list" in errors["1_plotQA.json record 4"]
    assert "duration 'long' is not a number" in errors["1_plotQA.json record 6"]
    assert "'answer' is missing" in errors["1_plotQA.json record 7"]
    assert "scoring_points must be a non-empty list" in errors["8_sub_scene.json record 1"]
    assert "not a readable JSON file" in errors["3_ego.json"] and "not a list of records" in errors["4_count.json"]
    assert errors["5_order.json"].endswith("5_order.json: not found — the MLVU dev release has all nine task files")
    problems = Mlvu(data=str(root)).check()
    assert "PQA_4: answer 'z' is not among the candidates — the official scorer counts it wrong" in problems
    with pytest.raises(LvuError, match="no MLVU annotation files"):
        Mlvu(data=str(tmp_path)).load()


def test_data_check_counts_against_the_paper(root, monkeypatch):
    (root / "MLVU" / "video" / "3_ego" / "ego_1.mp4").unlink()
    problems = Mlvu(data=str(root)).check()
    assert any(p.startswith("ER_0: video ego_1.mp4 not found — tried ") and p.endswith("pass --video-dir DIR holding ego_1.mp4")
               for p in problems)
    assert "mlvu dev PQA: 2 questions, the paper has 539" in problems
    assert "mlvu dev: 10 usable questions in tasks TR,AR,VS,NQA,ER,PQA,SSC,AO,AC, the paper has 2593" in problems
    shutil.copy(root / "MLVU" / "video" / "4_count" / "count_1.mp4", root / "MLVU" / "video" / "3_ego" / "ego_1.mp4")
    monkeypatch.setitem(mlvu.PAPER_COUNTS, "dev", {c: 2 if c == "PQA" else 1 for c in mlvu.PAPER_COUNTS["dev"]})
    assert Mlvu(data=str(root)).check() == []
    assert Mlvu(data=str(root), tasks="mc").check() == []


def test_settings_are_validated_with_one_line_errors():
    bad = [dict(compat="lmms"), dict(split="val"), dict(subtitles="all"), dict(frames=0), dict(fps=-1),
           dict(tasks="XYZ"), dict(tasks="SQA"), dict(compat="lmms-eval", tasks="gen"),
           dict(compat="lmms-eval", fps=1.0), dict(colour="red")]
    for settings in bad:
        with pytest.raises(LvuError) as e:
            Mlvu(**settings)
        assert "\n" not in str(e.value), settings
    assert Mlvu(compat="lmms-eval").tasks == ["TR", "AR", "NQA", "ER", "PQA", "AO", "AC"]  # no generation
    assert Mlvu(split="test", tasks="mc").tasks == ["TR", "AR", "NQA", "ER", "PQA", "SQA", "AO", "AC", "TQA"]


# ---- inputs and prompts ----------------------------------------------------------------------------


def test_frame_plans_follow_each_protocol(root):
    assert mlvu_indices(100, 4) == [12, 37, 62, 86]  # seg 24.75: int(12.375 + round(24.75 * i))
    assert mlvu_indices(10, 4) == [1, 3, 5, 8]  # round(4.5) = 4: numpy rounds half to even
    s = by_id(Mlvu(data=str(root)).load()[0])["NQA_0"]
    times = {}
    for name, settings in {"official": {}, "fps": {"fps": 0.5}, "lmms": {"compat": "lmms-eval"},
                           "vlm": {"compat": "vlmevalkit"}, "vlm-fps": {"compat": "vlmevalkit", "fps": 2}}.items():
        b = Mlvu(data=str(root), frames=4, **settings)
        plan = b.plan(s, video_meta(s))
        assert plan.subtitle_mode == "none"
        times[name] = [round(t, 3) for t in plan.timestamps]
    assert times["official"] == [0.3, 1.0, 1.7, 2.5]  # T=30: seg 7.25 → frames 3, 10, 17, 25
    assert times["fps"] == [0.0, 2.0]  # the paper's "0.5 fps": t = k / 0.5 within 3 s
    assert times["lmms"] == [0.0, 0.9, 1.9, 2.9]  # linspace(0, 29, 4)
    assert times["vlm"] == [0.6, 1.2, 1.8, 2.4]  # int(i * 30 / 5)
    assert times["vlm-fps"] == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]  # int(i * 10 / 2), i < int(3 s * 2)
    assert Mlvu(data=str(root), resize=512).plan(s, video_meta(s)).resize == 512


def test_prompts_are_byte_identical_to_the_official_templates(root):
    s = by_id(Mlvu(data=str(root)).load()[0])
    frames = [Frame(timestamp=0.5), Frame(timestamp=1.5)]
    p = Mlvu(data=str(root)).build_prompt(s["NQA_0"], frames, [])
    assert p.system == ("Carefully watch this video and pay attention to every detail. Based on your observations, "
                        "select the best option that accurately addresses the question.")
    assert p.summary()["order"] == "FFT" and p.assistant_prefix == "Best Option: ("
    assert p.parts[-1].text == (
        "Question: Where is the senior businessman having a serious conversation on the cell phone?\nOptions:\n"
        "(A) In a park\n(B) By the sea shore\n(C) In his office\n(D) At a restaurant\nOnly give the best option.")
    assert p.choices == NEEDLE_OPTS and p.question == NEEDLE_Q
    g = Mlvu(data=str(root)).build_prompt(s["VS_0"], frames, [])
    assert g.system == ("Carefully watch this video and pay attention to every detail. Based on your observations, "
                        "answer the given questions.")
    assert g.parts[-1].text == "Please summarize this video, including its main content."
    assert g.assistant_prefix is None and g.summary()["order"] == "FFT" and g.choices == []
    lm = Mlvu(data=str(root), compat="lmms-eval").build_prompt(s["NQA_0"], frames, [])
    assert lm.system is None and lm.assistant_prefix is None and lm.max_tokens == 16
    assert lm.parts[-1].text == (NEEDLE_Q + "\n(A) In a park\n(B) By the sea shore\n(C) In his office\n"
                                 "(D) At a restaurant\nOnly give the best option.\nBest option: (")
    lt = Mlvu(data=str(root), compat="lmms-eval", split="test").build_prompt(s["NQA_0"], frames, [])
    assert lt.parts[-1].text == NEEDLE_Q + "\n(A) In a park\n(B) By the sea shore\n(C) In his office\n(D) At a restaurant"
    old = Mlvu(data=str(root), compat="vlmevalkit@296425e2").build_prompt(s["NQA_0"], frames, [])
    assert old.summary()["order"] == "TFFT" and old.system == p.system and old.assistant_prefix is None
    assert old.parts[0].text == p.parts[-1].text[:-len("\nOnly give the best option.")]
    assert old.parts[-1].text == "\nOnly give the best option."
    og = Mlvu(data=str(root), compat="vlmevalkit@296425e2").build_prompt(s["SSC_0"], frames, [])
    assert og.summary()["order"] == "TFF" and og.system == g.system
    # e8e78f05 (the default vlmevalkit): the frames come first, then the same two texts
    vk = Mlvu(data=str(root), compat="vlmevalkit").build_prompt(s["NQA_0"], frames, [])
    assert vk.summary()["order"] == "FFTT" and vk.system == p.system and vk.assistant_prefix is None
    assert [x.text for x in vk.parts[2:]] == [old.parts[0].text, "\nOnly give the best option."]
    vg = Mlvu(data=str(root), compat="vlmevalkit").build_prompt(s["SSC_0"], frames, [])
    assert vg.summary()["order"] == "FFT" and vg.system == g.system and vg.parts[-1].text == og.parts[0].text


# ---- extraction and scoring ---------------------------------------------------------------------------

# (reply, what check_ans compares, credited) for the needle question, answer B "By the sea shore"
OFFICIAL = [
    ("B", "B", True),  # a bare letter: no ")" so the whole reply is compared
    ("B) By the sea shore", "B", True),  # the continuation of the "Best Option: (" prefill
    ("(B) By the sea shore", "B", True),
    ("  B) x\n", "B", True),  # the decoded reply is stripped first, as every official script does
    ("The best option is (B).", "B", True),
    ("Best Option: (B)", "B", True),
    ("BB)", "B", True),
    ("B. By the sea shore", "B. By the sea shore", False),  # no ")" → the whole reply ≠ "B"
    ("B\nThe man stands by the sea.", "B\nThe man stands by the sea.", False),
    ("b) by the sea shore", "b", False),  # case-sensitive
    ("By the sea shore", "By the sea shore", False),
    ("A man (in a suit) B)", "t", False),  # the first ")" closes "(in a suit)"
    (")B", "", False),  # ")" first: the char before it is nothing
    ("C) In his office, not B)", "C", False),
    ("E) none of these", "E", False),  # not an option letter: kept as the compared string
    ("", "", False),
]


@pytest.mark.parametrize("reply,compared,credited", OFFICIAL)
def test_official_check_ans(root, reply, compared, credited):
    b = Mlvu(data=str(root))
    s = by_id(b.load()[0])["NQA_0"]
    pred = b.extract(s, Response(text=reply))
    score = b.score(s, pred)
    assert (score.correct, score.value, score.counted) == (credited, float(credited), True)
    assert score.explanation == f"check_ans: char before the first ')': compared {compared!r} with 'B'"
    assert pred.value == ("ABCD".index(compared) if len(compared) == 1 and compared in "ABCD" else compared or None)


def test_answer_letter_quirks(tmp_path, root, video):
    b = Mlvu(data=str(root))
    dup = by_id(b.load()[0])["PQA_1"]  # Red, Blue, Red, Green; answer Red → C (last equal candidate)
    assert [b.score(dup, b.extract(dup, Response(text=t))).correct for t in ("A)", "C)")] == [False, True]
    files = {"1_plotQA": [mc("movie101_66.mp4", "plotQA", "Q?", ["a", "b", "c", "d"], "z")]}
    miss = Mlvu(data=str(write_release(tmp_path / "m", video.path, files))).load()[0][0]
    assert miss.answer is None and miss.extra["answer_letter"] == "@"  # chr(ord('A') - 1)
    assert [b.score(miss, b.extract(miss, Response(text=t))).correct for t in ("A)", "@)")] == [False, True]


LMMS = [  # lmms-eval 0.7.3 extract_mcq_answer with A-D, answer B
    ("B. By the sea shore", True),  # "start" format wins
    ("The answer is C, not B", True),  # a final standalone letter ("end") beats the phrase
    ("I think (C) is wrong; the answer is B.", True),
    ("A man stands by the sea", False),  # the article "A" is a letter at the start
    ("By the sea shore", True),  # no format matches ("By" is a word); the fallback finds the only capital B
    ("Red", False),  # no A-D at all → "" (unanswered, wrong)
]


@pytest.mark.parametrize("reply,credited", LMMS)
def test_lmms_eval_extraction(root, reply, credited):
    b = Mlvu(data=str(root), compat="lmms-eval")
    s = by_id(b.load()[0])["NQA_0"]
    assert b.score(s, b.extract(s, Response(text=reply))).correct is credited


def test_lmms_eval_never_credits_test_options_e_and_f():
    b = Mlvu(compat="lmms-eval", split="test")
    from lvu.types import Sample

    s = Sample(id="AR_0", benchmark="mlvu", video={"path": "x.mp4"}, question="Q?", options=list("uvwxyz"),
               answer=4, labels={"task": "AR"}, extra={"answer_letter": "E"})
    assert b.extract(s, Response(text="E")).value is None and b.score(s, b.extract(s, Response(text="E"))).correct is False
    assert Mlvu(split="test").score(s, Mlvu(split="test").extract(s, Response(text="E"))).correct is True


VLMEVALKIT = [  # check_ans, else can_infer (exact_matching, no judge); answer B; (credited, method) at e8e78f05, 296425e2
    ("B) By the sea shore", (True, "rule"), (True, "rule")),
    ("B. By the sea shore", (True, CAN_INFER), (True, CAN_INFER)),  # 296425e2: one letter; e8e78f05: the text
    ("By the sea shore", (True, CAN_INFER), (True, CAN_INFER)),  # no letter: the option text is in the reply
    # the article "A" is the one letter: 296425e2 reads it anywhere, e8e78f05 only among the last 4 words (then the text)
    ("A man stands by the sea shore", (True, CAN_INFER), (False, CAN_INFER)),
    ("I'd say C) In his office", (False, CAN_INFER), (False, CAN_INFER)),
    ("B and C", (False, UNMATCHED), (False, UNMATCHED)),  # two letters, no option text: the judge's row
    ("Cannot determine the answer", (False, CAN_INFER), (False, CAN_INFER)),  # refusal → 'Z'
]


@pytest.mark.parametrize("reply,e8e78f05,c296425e2", VLMEVALKIT)
def test_vlmevalkit_extraction(root, reply, e8e78f05, c296425e2):
    for compat, want in (("vlmevalkit", e8e78f05), ("vlmevalkit@296425e2", c296425e2)):
        b = Mlvu(data=str(root), compat=compat)
        s = by_id(b.load()[0])
        pred = b.extract(s["NQA_0"], Response(text=reply))
        assert (b.score(s["NQA_0"], pred).correct, pred.method) == want, compat
        if reply.startswith("Cannot"):
            assert pred.value == "Z"


def test_vlmevalkit_fallback_uses_the_first_equal_candidate(root):
    b = Mlvu(data=str(root), compat="vlmevalkit")
    dup = by_id(b.load()[0])["PQA_1"]  # Red, Blue, Red, Green: check_ans wants C (last), can_infer A (first)
    assert [b.score(dup, b.extract(dup, Response(text=t))).correct for t in ("A", "C)", "Red")] == [True, True, False]


# ---- aggregation -------------------------------------------------------------------------------------


def result(sid, task, score=None, *, counted=True, error=None):
    return SampleResult(sample_id=sid, labels={"task": task}, score=score, counted=counted, error=error,
                        correct=None if score is None else score == 1.0, answer=None if counted is False else 0)


def table(tables, title):
    return {name: (n, value) for name, n, value in next(t for t in tables if t.title.startswith(title)).rows}


MC_RESULTS = ([result(f"p{i}", "PQA", s) for i, s in enumerate([1, 1, 1, 0])] + [result("p9", "PQA", error="boom")]
              + [result("n0", "NQA", 1.0), result("n1", "NQA", 0.0), result("o0", "AO", 0.0), result("a0", "AR", 1.0)])


def test_m_avg_official_and_harness_weightings():
    official = Mlvu().aggregate(MC_RESULTS)
    tasks = table(official, "multiple-choice")
    assert tasks == {"AR": (1, 100.0), "NQA": (2, 50.0), "PQA": (5, 60.0), "AO": (1, 0.0)}  # a failed sample is wrong
    assert list(tasks) == ["AR", "NQA", "PQA", "AO"]  # Table 1 column order
    assert table(official, "overall") == {"M-Avg": (9, 52.5)}  # (100 + 50 + 60 + 0) / 4 tasks
    assert table(Mlvu(compat="lmms-eval").aggregate(MC_RESULTS), "overall")["M-Avg"][1] == pytest.approx(30.0)  # / 7
    assert table(Mlvu(compat="vlmevalkit@296425e2").aggregate(MC_RESULTS), "overall")["M-Avg"] == (8, 62.5)  # 5/8, no AO
    assert table(Mlvu(compat="vlmevalkit").aggregate(MC_RESULTS), "overall")["M-Avg"] == (9, pytest.approx(500 / 9))  # AO in
    lm_test = Mlvu(compat="lmms-eval", split="test").aggregate(MC_RESULTS)
    assert table(lm_test, "overall")["M-Avg"][1] == pytest.approx(210 / 9)


def test_generation_is_stored_pending_the_judge_then_averaged(root):
    b = Mlvu(data=str(root))
    s = by_id(b.load()[0])
    pred = b.extract(s["SSC_0"], Response(text="  The man walks in with a swagger. "))
    score = b.score(s["SSC_0"], pred)
    assert pred.value == "The man walks in with a swagger."
    assert math.isnan(score.value) and score.counted is False and score.correct is None
    assert score.explanation == mlvu.JUDGE_PENDING and "--judge NAME" in score.explanation
    pending = MC_RESULTS + [result("s0", "SSC", math.nan, counted=False), result("v0", "VS", math.nan, counted=False)]
    tables = b.aggregate(pending)
    assert table(tables, "overall")["M-Avg"] == (9, 52.5) and math.isnan(table(tables, "overall")["G-Avg"][1])
    gen = next(t for t in tables if t.title.startswith("generation"))
    assert mlvu.JUDGE_PENDING in gen.title and [r[0] for r in gen.rows] == ["VS", "SSC"]
    judged = MC_RESULTS + [result("s0", "SSC", 7.5), result("s1", "SSC", 6.25), result("v0", "VS", 5.0),
                           result("v1", "VS", error="timeout")]
    tables = b.aggregate(judged)
    assert table(tables, "generation") == {"VS": (2, 2.5), "SSC": (2, 6.875)}  # a failed reply scores 0
    assert table(tables, "overall")["G-Avg"] == (4, pytest.approx((6.875 + 2.5) / 2))
    vk = Mlvu(compat="vlmevalkit").aggregate(judged[:-1])
    assert table(vk, "overall")["G-Avg"][1] == pytest.approx((7 + 6 + 5) / 3)  # int(score), question-weighted


# ---- test split and submissions ----------------------------------------------------------------------


def test_test_split_hidden_answers_and_submission(tmp_path, video):
    home = tmp_path / "MLVU_Test"
    (home / "leaderboard").mkdir(parents=True)
    (home / "video").mkdir()
    six = ["Fighting", "Shoplifting", "Arrest", "Normal", "Shooting", "Vandalism"]
    recs = [{"video": "test_surveil_27.mp4", "duration": 3.0, "question": "Is there anything unusual?",
             "candidates": six, "question_type": "anomaly_reco", "question_id": "AR_0"},
            {"video": "test_sports_1.mp4", "duration": 3.0, "question": "Who scores?", "candidates": six,
             "question_type": "sportsQA", "question_id": "SQA_0"},
            {"video": "test_tutorial_1.mp4", "duration": 3.0, "question": "What is step 2?", "candidates": six,
             "question_type": "tutorialQA", "question_id": "TQA_0"}]
    (home / "leaderboard" / "test_question.json").write_text(json.dumps(recs))
    for r in recs:
        shutil.copy(video.path, home / "video" / r["video"])
    b = Mlvu(data=str(home), split="test")
    samples, bad = b.load()
    assert bad == [] and [s.id for s in samples] == ["AR_0", "SQA_0", "TQA_0"]
    assert all(s.answer is None and Path(s.video.path).exists() for s in samples)
    assert b.build_prompt(samples[0], [], []).parts[-1].text.endswith("(F) Vandalism\nOnly give the best option.")
    score = b.score(samples[0], b.extract(samples[0], Response(text="B)")))
    assert score.counted is False and "hidden" in score.explanation
    results = score_saved(b, [(samples[0], "B) Shoplifting"), (samples[1], "The answer is E) Shooting"),
                              (samples[2], "F")])
    failed = SampleResult(sample_id="TQA_0", labels=samples[2].labels, error="model error: timeout")
    assert math.isnan(table(b.aggregate([*results[:2], failed]), "overall")["M-Avg"][1])  # nothing is known
    out = b.write_submission(results, tmp_path / "sub" / "test_res.json")
    assert json.loads(out.read_text()) == [  # Evaluation_Test/test_bench.py: the reply up to its first ")"
        {"question_id": "AR_0", "question_type": "anomaly_reco", "option": "B"},
        {"question_id": "SQA_0", "question_type": "sportsQA", "option": "The answer is E"},
        {"question_id": "TQA_0", "question_type": "tutorialQA", "option": "F"}]
    # the 2025 ground-truth release is read first and scored like dev
    (home / "leaderboard" / "test_mcq_gt.json").write_text(json.dumps([{**r, "answer": "Vandalism"} for r in recs]))
    gt = Mlvu(data=str(home), split="test")
    scored = gt.aggregate(score_saved(gt, [(s, t) for s, t in zip(gt.load()[0], ["F) x", "E) x", "F"])]))
    assert table(scored, "multiple-choice") == {"AR": (1, 100.0), "SQA": (1, 0.0), "TQA": (1, 100.0)}


def test_generation_outputs_for_the_official_judge_and_lvu_score(tmp_path, root):
    b = Mlvu(data=str(root))
    s = by_id(b.load()[0])
    results = score_saved(b, [(s["SSC_0"], "A man walks."), (s["VS_0"], "Animals."), (s["NQA_0"], "B")])
    folder = b.write_submission(results, tmp_path / "gen")
    assert json.loads((folder / "subplot_all.json").read_text()) == [
        {"video_name": "subPlot_new_all_126.mp4", "Q": DEV["8_sub_scene"][0]["question"],
         "A": DEV["8_sub_scene"][0]["answer"], "pred": "A man walks."}]
    assert json.loads((folder / "summary_all.json").read_text())[0]["pred"] == "Animals."
    with pytest.raises(LvuError, match="dev answers are public"):
        b.write_submission(results[2:], tmp_path / "none")
    # `lvu score` reads the official outputs back: choice_bench's res_list, open_bench's list, submissions
    res_list = {"acc_dict": {}, "res_list": [
        {"pred": "B) By the sea shore", "gt": "(B) By the sea shore", "question": qa_template(NEEDLE_Q, NEEDLE_OPTS),
         "question_type": "needle", "video": "/somewhere/needle_1.mp4"},
        {"pred": "C", "gt": "(A) Yellow", "question": qa_template(s["PQA_0"].question, s["PQA_0"].options),
         "question_type": "plotQA", "video": "movie101_66.mp4"}]}
    (tmp_path / "choice.json").write_text(json.dumps(res_list))
    pairs = b.read_predictions(tmp_path / "choice.json")
    assert [(x.id, t) for x, t in pairs] == [("NQA_0", "B) By the sea shore"), ("PQA_0", "C")]
    assert table(b.aggregate(score_saved(b, pairs)), "multiple-choice") == {"NQA": (1, 100.0), "PQA": (1, 0.0)}
    assert [x.id for x, _ in b.read_predictions(folder / "subplot_all.json")] == ["SSC_0"]
    (tmp_path / "sub.json").write_text(json.dumps([{"question_id": "TR_0", "question_type": "x", "option": "D"}]))
    assert b.read_predictions(tmp_path / "sub.json")[0][0].id == "TR_0"
    (tmp_path / "odd.json").write_text(json.dumps([{"question_id": "XX_9", "option": "D"}]))
    with pytest.raises(LvuError, match="row 1: no MLVU dev question matches 'XX_9'"):
        b.read_predictions(tmp_path / "odd.json")


# ---- end to end ------------------------------------------------------------------------------------------


@register_model("mlvu-test-echo")
class _Echo(Model):
    """Answers 'B)' to choices and a fixed caption otherwise (enough to exercise both paths)."""

    async def generate(self, prompt, *, sample_id=""):
        return Response(text="B) x" if prompt.choices else "A man walks by the sea.")


@pytest.mark.slow
def test_runs_end_to_end_with_baselines(tmp_path, root, monkeypatch):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-m", "lvu.cli", "run", "-b", "mlvu", "-m", "random", "--data", str(root),
                          "--frames", "4", "--set", "tasks=mc", "--results-dir", str(tmp_path / "r"), "--no-report"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "M-Avg" in out.stdout and "8 samples" in out.stdout
    check = subprocess.run([sys.executable, "-m", "lvu.cli", "data", "check", "mlvu", "--root", str(root)],
                           capture_output=True, text=True)
    assert check.returncode == 1 and "mlvu dev PQA: 2 questions, the paper has 539" in check.stdout
    common = dict(settings={"data": str(root), "frames": 2}, results_dir=tmp_path / "r", show_progress=False,
                  report=False)
    echo = run("mlvu", "mlvu-test-echo", **common)
    assert echo.n_failed == 0 and echo.n_total == 10
    rows = {t.title: {n: (k, v) for n, k, v in t.rows} for t in echo.tables}
    assert rows["multiple-choice task (accuracy %)"]["NQA"] == (1, 100.0)  # "B)" → B, the needle answer
    assert math.isnan(rows["overall"]["G-Avg"][1])  # generation replies stored, waiting for the judge
    rnd = run("mlvu", "random", **common)  # random answers choices only: the two generation samples fail
    assert rnd.n_failed == 2 and {sid for sid, _ in rnd.errors} == {"SSC_0", "VS_0"}
    pytest.importorskip("rapidocr")
    ocr = run("mlvu", "ocr-match", settings={"data": str(root), "frames": 2, "tasks": "mc"},
              results_dir=tmp_path / "r", show_progress=False, report=False)
    assert ocr.n_failed == 0 and ocr.n_total == 8
