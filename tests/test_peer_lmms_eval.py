"""Peer-code parity (issue 20): lmms-eval 0.7.3's own task code and `lvu score BENCH FILE --set
compat=lmms-eval` score the same adversarial replies identically, in every breakdown lmms-eval
prints, for Video-MME, LongVideoBench, MLVU, LVBench and Neptune.

lmms-eval's side is its installed wheel (`pip install --no-deps lmms-eval==0.7.3`, in the README's
test command), loaded by path with the stand-ins tests/lmms_eval_peer.py lists: its task YAML,
`utils.py`, `_task_utils/mcq_extract.py` and `api/reasoning.py` run unchanged. It scores the replies
and writes the --log_samples file; lvu's side is the real CLI command reading that file with the
release files beside it, its printed tables captured from `print_tables`.

lmms-eval prints Video-MME and MLVU breakdowns as "%.1f", LongVideoBench and Neptune as fractions
rounded to 5 places and LVBench not at all: each lvu row is compared at that precision (n too
where lmms-eval prints it), and every overall value at full precision.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

import lvu.cli.root as cli
import lvu.cli.scoring as scoring_cli
from lmms_eval_peer import Peer, write_log
from lvu.benchmarks.longvideobench import random_letter
from lvu.benchmarks.longvideobench_ref import CATEGORIES as LVB_CATEGORIES
from lvu.benchmarks.longvideobench_release import GROUPS
from lvu.benchmarks.mlvu import LMMS_TYPES
from lvu.benchmarks.mlvu_release import BY_TYPE
from lvu.benchmarks.videomme import DOMAINS, TASK_TYPES
from lvu.scoring.choice import lmms_extract_mcq
from lvu.scoring.lmms_eval import strip_reasoning_tags

# (reply, the letter a reader would take from it; None: no answer). Letters in every format, lower
# case, option text only, refusals, several letters, letters beyond the options, CJK, markdown,
# reasoning before the answer, reasoning blocks lmms-eval's evaluator strips, empty.
RESPONSES: list[tuple[str, str | None]] = [
    ("C", "C"), ("(B)", "B"), ("D.", "D"), ("A) The man in red", "A"), ("Answer: b", "B"), ("c", "C"),
    ("The answer is C.", "C"), ("Based on the video, the answer is C.", "C"),
    ("After watching the whole clip carefully, I believe the right choice is option D", "D"),
    ("**C**", "C"), ("**Answer:** (A) A cat.", "A"), ("答案是C", "C"), ("答案：B。", "B"), ("选项Ｄ", "D"),
    ("E", "E"), ("F. None of the above", None), ("A or B", None), ("Both C and D fit, but D fits best.", "D"),
    ("Three birds.", "C"), ("I'm sorry, I cannot determine the answer from the video.", None), ("", None),
    ("<think>Option A is wrong and B is unlikely.</think>\nC", "C"),
    ("<think>Counting: A, B...</think> The best answer is D.", "D"), ("The best answer is: A", "A"),
    ("Best option: (B)", "B"), ("B: two dogs", "B"), ("d) nothing", "D"), ("Option A", "A"),
    ("The correct answer is (D) because the video ends dark.", "D"),
    ("Let me think step by step. A is out, B is out. The answer is C", "C"),
]
OPTIONS = ["A cat", "Two dogs", "Three birds", "Nothing", "A horse"]
assert len(RESPONSES) >= 24


def gold(intended: str | None, n_options: int) -> str:
    """The answer letter of the question a reply answers: the intended letter when it is an option."""
    return intended if intended and intended in "ABCDE"[:n_options] else "B"


def replies() -> list[str]:
    return [reply for reply, _ in RESPONSES]


@pytest.fixture()
def peer(monkeypatch, tmp_path) -> Peer:
    return Peer(monkeypatch, tmp_path / "hf_home")


@dataclass
class Pair:
    """One number lmms-eval gives and lvu's, each written at the precision lmms-eval prints."""

    breakdown: str
    lmms: str
    lvu: str


COMPAT = "compat=lmms-eval"


def lvu_score(monkeypatch, benchmark: str, log: Path, data: Path, *options: str) -> dict[str, dict]:
    """`lvu score BENCH LOG --data DATA --set compat=lmms-eval`: {table title: {row: (n, score %)}}
    of every table it prints (captured at full precision on the way to the console)."""
    printed = []
    real = scoring_cli.print_tables
    monkeypatch.setattr(scoring_cli, "print_tables", lambda tables, title: (printed.extend(tables), real(tables, title)))
    args = ["score", benchmark, str(log), "--data", str(data), "--set", COMPAT, *options]
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 0, result.output
    assert "matched no" not in result.output, result.output
    return {t.title: {name: (n, value) for name, n, value in t.rows} for t in printed}


LOG, EXPORT = "lmms-eval log", "lvu export"
"""The file `lvu score` reads: lmms-eval's --log_samples (replies as its evaluator filtered them) or
lvu's own export lines {sample_id, response} holding the raw replies (what `lvu run` stores: lvu
then strips the reasoning blocks itself)."""


def saved(tmp_path: Path, task: str, lmms, ids: list[str], source: str) -> Path:
    if source == LOG:
        return write_log(tmp_path / f"samples_{task}.jsonl", lmms.log_lines)
    path = tmp_path / f"{task}_lvu_export.jsonl"
    path.write_text("".join(json.dumps({"sample_id": i, "response": r}) + "\n" for i, r in zip(ids, replies(),
                                                                                               strict=True)))
    return path


def logged_percentages(lines: list) -> list[tuple[str, str, str]]:
    """lmms-eval's "Evaluation on <kind>: <name>: <x.x>%" lines as (kind, name, "x.x")."""
    out = []
    for line in lines:
        if m := re.fullmatch(r"Evaluation on (.+?): (.+): ?\s*(-?\d+\.\d)%", str(line)):
            out.append(m.groups())
    return out


# ---- Video-MME -----------------------------------------------------------------------------------

VIDEOS = [("short", "Knowledge", "Humanity & History"), ("short", "Film & Television", "Animation"),
          ("short", "Sports Competition", "Football"), ("short", "Life Record", "Food"),
          ("medium", "Artistic Performance", "Magic Show"), ("medium", "Multilingual", "Multilingual"),
          ("medium", "Knowledge", "Law"), ("long", "Film & Television", "Documentary"),
          ("long", "Sports Competition", "Esports"), ("long", "Life Record", "Travel")]


def videomme_rows() -> list[dict]:
    """Flat rows of lmms-eval/Video-MME (the hub schema: lmms-eval's docs and an lvu release file)."""
    rows = []
    for i, (_, intended) in enumerate(RESPONSES):
        duration, domain, sub = VIDEOS[i // 3]
        vid = f"vidMME{i // 3:05d}"
        rows.append({"video_id": f"{i // 3 + 1:03d}", "duration": duration, "domain": domain, "sub_category": sub,
                     "url": f"https://www.youtube.com/watch?v={vid}", "videoID": vid,
                     "question_id": f"{i // 3 + 1:03d}-{i % 3 + 1}", "task_type": TASK_TYPES[i % len(TASK_TYPES)],
                     "question": f"Question {i}: what is shown?",
                     "options": [f"{L}. {o}." for L, o in zip("ABCD", OPTIONS)], "answer": gold(intended, 4)})
    return rows


LMMS_KINDS = {"video Type": "overall", "Categories": "domain (overall)",
              "Video Sub Categories": "sub_category (overall)", "Task Categories": "task_type (overall)"}


def videomme_pairs(peer, monkeypatch, tmp_path, source=LOG) -> list[Pair]:
    task = peer.task("videomme", "videomme.yaml")
    docs = videomme_rows()
    lmms = peer.evaluate(task, docs, replies())
    data = tmp_path / "videomme.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in docs))
    ids = [d["question_id"] for d in docs]
    tables = lvu_score(monkeypatch, "videomme", saved(tmp_path, "videomme", lmms, ids, source), data)
    pairs = []
    for kind, name, printed in logged_percentages(lmms.logged):
        row = tables[LMMS_KINDS[kind]].get(name)
        if row is None:  # lmms-eval prints 0.0 for a group without questions; lvu prints no row
            assert printed == "0.0" and not any(name in (d["duration"], d["domain"], d["sub_category"],
                                                         d["task_type"]) for d in docs)
            continue
        pairs.append(Pair(f"{kind}: {name}", printed, f"{row[1]:.1f}"))
    assert len(pairs) == 3 + len({d["domain"] for d in docs}) + len({d["sub_category"] for d in docs}) + 12
    assert set(DOMAINS) >= {d["domain"] for d in docs}
    n, value = tables["overall"]["overall"]  # all questions in the denominator, as lmms-eval divides
    overall = lmms.values["videomme_perception_score"]
    assert f"Overall Performance: {overall: .1f}%" in lmms.logged
    return [*pairs, Pair("Overall (returned)", repr(overall), repr(value)), Pair("Overall n", str(len(docs)), str(n))]


def test_mcq_extract_port_is_lmms_evals_function(peer):
    """lvu.scoring.choice.lmms_extract_mcq (Video-MME, LVBench, MLVU) against the wheel's own, on
    every adversarial reply, for the choice lists its tasks pass."""
    for reply in [*replies(), "  (c)  ", "E.", "The answer is E", "Ａ", "答えはB", "I choose b", "(A) (B)"]:
        for choices in ("ABCD", "ABCDEFGH"):
            assert lmms_extract_mcq(reply, choices) == peer.mcq_extract.extract_mcq_answer(reply, list(choices)), reply


def test_reasoning_tag_stripping_is_lmms_evals(peer):
    """lvu.scoring.lmms_eval.strip_reasoning_tags against the wheel's api/reasoning.py with the CLI's
    default tags: whole blocks, nested and unclosed tags, a lone closing tag (prefilled opening)."""
    for reply in [*replies(), "<think>a</think><think>b</think> B", "<think>open only C", "thinking...</think>\nD",
                  "<analysis>x</analysis>A<think>y</think>", "<THINK>upper</THINK> C", "</think>A</think>B",
                  "<think><analysis>in</analysis></think>C", "  <think></think>  "]:
        assert strip_reasoning_tags(reply) == peer.strip_reasoning(reply), reply
        assert strip_reasoning_tags(reply, "lmms-eval@0.6") == reply  # 0.6 had no --reasoning_tags


# ---- LVBench -------------------------------------------------------------------------------------

LVBENCH_TYPES = [["key information retrieval"], ["event understanding"], ["summarization"],
                 ["entity recognition", "reasoning"], ["temporal grounding"]]


def lvbench_release(tmp_path: Path) -> tuple[list[dict], Path]:
    """lmms-eval/LVBench's flat rows (its docs) and the same questions as THUDM's video_info.meta.jsonl."""
    docs, videos = [], {}
    for i, (_, intended) in enumerate(RESPONSES):
        key = f"lvbVid{i // 5:04d}"
        question = f"Question {i}: what is shown?\n" + "\n".join(f"({L}) {o}" for L, o in zip("ABCD", OPTIONS))
        qa = {"uid": str(1000 + i), "question": question, "answer": gold(intended, 4),
              "question_type": LVBENCH_TYPES[i % 5], "time_reference": "00:15-00:19"}
        docs.append({"key": key, "type": "cartoon", **qa, "video_path": f"{key}.mp4"})
        videos.setdefault(key, []).append(qa)
    info = {"duration_minutes": 61.5, "fps": 30.0, "resolution": {"width": 640, "height": 360}}
    meta = tmp_path / "lvbench" / "video_info.meta.jsonl"
    meta.parent.mkdir()
    meta.write_text("".join(json.dumps({"key": k, "type": "cartoon", "qa": q, "video_info": info}) + "\n"
                            for k, q in videos.items()))
    return docs, meta


def lvbench_pairs(peer, monkeypatch, tmp_path, source=LOG) -> list[Pair]:
    task = peer.task("lvbench", "lvbench.yaml")
    docs, meta = lvbench_release(tmp_path)
    lmms = peer.evaluate(task, docs, replies())
    tables = lvu_score(monkeypatch, "lvbench", saved(tmp_path, "lvbench", lmms, [d["uid"] for d in docs], source), meta)
    n, value = tables["overall"]["all"]  # lmms-eval's only number: the mean of its 0/1 scores, unprinted
    return [Pair("lvbench_score (returned) x 100", f"{100 * lmms.values['lvbench_score']:.12f}", f"{value:.12f}"),
            Pair("n", str(len(docs)), str(n))]


# ---- MLVU ----------------------------------------------------------------------------------------


def mlvu_release(tmp_path: Path, split: str) -> tuple[list[dict], Path, list[str]]:
    """sy1998/MLVU_dev / MLVU_Test-style docs (question with its "(A) …" lines, answer letter,
    task_type) and the same questions as the official files (dev: json/<n>_<task>.json; test:
    test_mcq_gt.json, six options); lvu's ids (dev <task code>_<position>, test question_id)."""
    docs, files, ids = [], {}, []
    types, n = LMMS_TYPES[split], 4 if split == "dev" else 6
    options = [*OPTIONS, "A fish"][:n]
    for i, (_, intended) in enumerate(RESPONSES):
        lmms_type = types[i % len(types)]
        task = BY_TYPE[lmms_type]
        letter = gold(intended, n)
        question = f"Question {i}: what is shown?"
        video = f"{task.code.lower()}_{i}.mp4"
        record = {"video": video, "duration": 120.0, "question": question, "candidates": options,
                  "answer": options["ABCDEF".index(letter)],
                  "question_type": task.types[0] if split == "dev" else lmms_type}
        if split == "test":
            record["question_id"] = f"{lmms_type}_{i}"
        ids.append(record.get("question_id") or f"{task.code}_{len(files.get(task.file, []))}")
        files.setdefault(task.file if split == "dev" else "test_mcq_gt", []).append(record)
        lines = "\n".join(f"({L}) {o}" for L, o in zip("ABCDEF", options))
        docs.append({"video_name": video, "question": f"{question}\n{lines}", "answer": letter,
                     "task_type": lmms_type, "duration": 120.0})
    root = tmp_path / "mlvu" / "MLVU" / "json" if split == "dev" else tmp_path / "mlvu"
    root.mkdir(parents=True)
    for stem, records in files.items():
        (root / f"{stem}.json").write_text(json.dumps(records))
    return docs, tmp_path / "mlvu", ids


def mlvu_pairs(peer, monkeypatch, tmp_path, source=LOG, split="dev") -> list[Pair]:
    """mlvu_dev, or mlvu_test (six options, of which its A-D extraction can never credit E or F)."""
    task = peer.task("mlvu", f"mlvu_{split}.yaml")
    docs, data, ids = mlvu_release(tmp_path, split)
    lmms = peer.evaluate(task, docs, replies())
    tables = lvu_score(monkeypatch, "mlvu", saved(tmp_path, f"mlvu_{split}", lmms, ids, source), data,
                       "--set", f"split={split}")
    per_task = tables["multiple-choice task (accuracy %)"]
    printed = logged_percentages(lmms.logged)
    assert len(printed) == len(LMMS_TYPES[split]) and {kind for kind, _, _ in printed} == {"Task Categories"}
    pairs = [Pair(f"{split} Task Categories: {name}", value, f"{per_task[BY_TYPE[name].code][1]:.1f}")
             for _, name, value in sorted(printed)]
    m_avg = tables["overall"]["M-Avg"][1]  # macro over its 7 (test: 9) types
    line = next(x for x in lmms.logged if str(x).startswith("Average Performance"))
    return [*pairs, Pair(f"{split} Average Performance (printed)", line,
                         f"Average Performance Across All Task Categories: {m_avg:.1f}%"),
            Pair(f"{split} M-Avg (returned)", f"{lmms.values['mlvu_percetion_score']:.12f}", f"{m_avg:.12f}")]


def mlvu_test_pairs(peer, monkeypatch, tmp_path, source=LOG) -> list[Pair]:
    return mlvu_pairs(peer, monkeypatch, tmp_path, source, split="test")


# ---- LongVideoBench ------------------------------------------------------------------------------


def lvb_release(tmp_path: Path) -> tuple[list[dict], Path]:
    """longvideobench/LongVideoBench parquet rows (option0..4, "N/A" padding: its docs) and the same
    questions as lvb_val.json (candidates lists)."""
    docs, records = [], []
    for i, (_, intended) in enumerate(RESPONSES):
        n = 5 if i % 3 == 0 else 4  # "E" (i = 14) lands on a four-option question
        group = list(GROUPS)[i % 4]
        category = LVB_CATEGORIES[i % len(LVB_CATEGORIES)]
        base = {"video_id": f"lvbv{i}", "question": f"Question {i}: what happened?", "id": f"lvbv{i}_0",
                "correct_choice": "ABCDE".index(gold(intended, n)), "question_category": category,
                "level": "L1-Perception" if LVB_CATEGORIES.index(category) < 8 else "L2-Relation",
                "duration_group": group, "duration": float(group), "video_path": f"lvbv{i}.mp4",
                "subtitle_path": f"lvbv{i}_en.json", "starting_timestamp_for_subtitles": 0.0,
                "topic_category": "KS-Knowledge-STEM", "position": [1], "view_count": 1, "type": "local"}
        records.append({**base, "candidates": OPTIONS[:n]})
        docs.append({**base, **{f"option{k}": OPTIONS[k] if k < n else "N/A" for k in range(5)}})
    (tmp_path / "lvb").mkdir()
    (tmp_path / "lvb" / "lvb_val.json").write_text(json.dumps(records))
    return docs, tmp_path / "lvb"


def longvideobench_pairs(peer, monkeypatch, tmp_path, source=LOG) -> list[Pair]:
    """Parse failures draw a random letter in both: lmms-eval from Python's global stream (run-order
    dependent), lvu per sample from (seed, id). The one stand-in: lmms-eval's `random` module is
    replaced by one whose choice() returns lvu's draw for the doc being scored; which docs fell
    back is compared too (lvu's --out rows explain a draw as "random pick ...")."""
    task = peer.task("longvideobench", "longvideobench_val_v.yaml")
    docs, data = lvb_release(tmp_path)
    current, fell_back = {}, []

    def choice(letters):
        fell_back.append(current["id"])
        return random_letter(0, current["id"], len(letters))

    monkeypatch.setattr(task.utils, "random", type("Random", (), {"choice": staticmethod(choice)}))
    lmms = peer.evaluate(task, docs, replies(), before_each=lambda doc: current.update(id=doc["id"]))
    log = saved(tmp_path, "longvideobench_val_v", lmms, [d["id"] for d in docs], source)
    tables = lvu_score(monkeypatch, "longvideobench-frames", log, data, "--out", str(tmp_path / "lvu.jsonl"))
    printed = next(x for x in lmms.logged if isinstance(x, dict))
    names = {str(g): label for g, label in GROUPS.items()}
    pairs = []
    for group, row in printed.items():
        if group == "Overall":
            continue
        n, value = tables["duration_group"][names[str(group)]] if str(group) in names else \
            tables["question_category"][group]
        pairs.append(Pair(f"{group}", f"{row['num']} {row['acc']}", f"{n} {round(value / 100, 5)}"))
    assert len(pairs) == 4 + len({d["question_category"] for d in docs})
    n, value = tables["overall"]["all"]
    # its Overall num counts each doc twice (once per partition); the accuracy is the plain mean
    pairs.append(Pair("Overall", f"{printed['Overall']['num']} {printed['Overall']['acc']}",
                      f"{2 * n} {round(value / 100, 5)}"))
    pairs.append(Pair("lvb_acc (returned, rounded by it)", str(lmms.values["lvb_acc"]), str(round(value / 100, 5))))
    drawn = sorted(r["sample_id"] for r in map(json.loads, (tmp_path / "lvu.jsonl").read_text().splitlines())
                   if r["explanation"].startswith("random pick"))
    assert fell_back
    return [*pairs, Pair("random-choice fallbacks", " ".join(sorted(fell_back)), " ".join(drawn))]


# ---- Neptune -------------------------------------------------------------------------------------

NEPTUNE_TYPES = ["Temporal Ordering", "Counting", "Cause and Effect", "Predictive", "Visual Reasoning"]


def neptune_release(tmp_path: Path) -> tuple[list[dict], Path]:
    """lmms-eval/GoogleDeepMind-NEPTUNE rows (its docs; lvu's record mapper reads the same rows)."""
    docs = []
    for i, (_, intended) in enumerate(RESPONSES):
        vid = f"nepVid{i // 2:05d}"
        docs.append({"key": f"{vid}/{i % 2 + 1}", "video_id": vid, "question": f"Question {i}: what happens?",
                     **{f"answer_choice_{k}": o for k, o in enumerate(OPTIONS)},
                     "answer_id": "ABCDE".index(gold(intended, 5)), "answer": OPTIONS["ABCDE".index(gold(intended, 5))],
                     "question_type": NEPTUNE_TYPES[i % len(NEPTUNE_TYPES)], "video_path": f"{vid}.mp4"})
    (tmp_path / "neptune").mkdir()
    (tmp_path / "neptune" / "neptune_full.json").write_text(json.dumps(docs))
    return docs, tmp_path / "neptune" / "neptune_full.json"


def neptune_pairs(peer, monkeypatch, tmp_path, source=LOG) -> list[Pair]:
    task = peer.task("neptune", "neptune_full_i.yaml")
    docs, data = neptune_release(tmp_path)
    lmms = peer.evaluate(task, docs, replies())
    tables = lvu_score(monkeypatch, "neptune", saved(tmp_path, "neptune_full_i", lmms, [d["key"] for d in docs],
                                                     source), data)
    printed = next(x for x in lmms.logged if isinstance(x, dict))
    assert len(printed) == len(NEPTUNE_TYPES) + 1
    pairs = []
    for qtype, row in printed.items():
        n, value = tables["overall"]["full"] if qtype == "Overall" else tables["question_type"][qtype]
        pairs.append(Pair(qtype, f"{row['num']} {row['acc']}", f"{n} {round(value / 100, 5)}"))
    value = tables["overall"]["full"][1]
    return [*pairs, Pair("neptune_acc (returned) x 100", f"{100 * lmms.values['neptune_acc']:.12f}", f"{value:.12f}")]


# ---- the parity tests: every pair equal --------------------------------------------------------------

BENCHMARKS = {"videomme": videomme_pairs, "longvideobench": longvideobench_pairs, "mlvu": mlvu_pairs,
              "mlvu-test": mlvu_test_pairs, "lvbench": lvbench_pairs, "neptune": neptune_pairs}


@pytest.mark.parametrize("source", [LOG, EXPORT])
@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_lvu_score_matches_lmms_eval(benchmark, source, peer, monkeypatch, tmp_path):
    pairs = BENCHMARKS[benchmark](peer, monkeypatch, tmp_path, source)
    assert len(pairs) >= 2 and [p for p in pairs if p.lmms != p.lvu] == []
