"""`lvu build filter` through the local fake OpenAI server on official-layout fixtures (Video-MME,
LVBench, Neptune), a JSONL file and the haystack: exact kept/removed sets per rule, threshold and seed
count, unparsable replies recorded, the kept file running under `-b jsonl` with its breakdowns,
--asr, failed calls, and kill -9 then resume giving the same files. The rules alone:
tests/test_build_blind.py."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from ledger_reading import committed
from lvu.benchmarks.jsonl import read_samples, write_samples
from lvu.construct.blind import seed_order
from lvu.media.testing import make_video
from lvu.models.testing_server import FakeOpenAIServer
from lvu.runs.grading import make_benchmark
from lvu.types import LETTERS, Sample, SubtitleRef, VideoRef

def user_text(body: dict) -> str:
    content = next(m for m in body["messages"] if m["role"] == "user")["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def shown_options(text: str) -> list[str]:
    """Option texts in the order the prompt shows them (QAD 'A. x' lines or text-only '(A) x' lines)."""
    found = re.findall(r"^(?:Options: )?([A-Z])\. (.+)$", text, re.M) or re.findall(r"^\(([A-Z])\) (.+)$", text, re.M)
    return [t for _, t in found]


def reply(behaviour: str, shown: list[str], correct: str) -> str:
    c = shown.index(correct)
    wrong = next(i for i in range(len(shown)) if i != c)
    rank = lambda top: "ANSWER: " + " > ".join(LETTERS[j] for j in [top, *(k for k in range(len(shown)) if k != top)])
    return {"right": LETTERS[c], "wrong": LETTERS[wrong], "garbage": "I cannot say without watching the video.",
            "rank": rank(c) + " EXPLANATION: the usual case.", "rank-wrong": rank(wrong) + " EXPLANATION: hm.",
            "name": f"It must be {correct.lower().rstrip('.')}, given the title.",
            "not-first": rank(1 if c == 0 else c)}[behaviour]


class Script:
    """The server's replies: per model name, question text -> behaviour (`*` for every model)."""

    def __init__(self, answers: dict[str, str], plan: dict[str, dict[str, str]]) -> None:
        self.answers, self.plan = answers, plan

    def __call__(self, body: dict) -> str:
        text = user_text(body)
        question = max((q for q in self.answers if q in text), key=len)
        plan = self.plan.get(body["model"], self.plan.get("*", {}))
        return reply(plan[question], shown_options(text), self.answers[question])


def lvu(*argv: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lvu.cli", *argv], capture_output=True, text=True, env=env, check=False)


@pytest.fixture()
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    return {**os.environ, "LVU_CACHE_DIR": str(tmp_path / "cache"), "LVU_OFFLINE": "1", "COLUMNS": "200",
            "LVU_RESULTS_DIR": str(tmp_path / "results")}


def model_args(server, *names: str) -> list[str]:
    args = ["-a", f"base_url={server.base_url}", "-a", "cache=false"]
    for i, name in enumerate(names, 1):
        args += ["-m", "openai", "-a", f"{i}.model={name}"]
    return args


def outputs(out: Path) -> tuple[list[str], list[str], dict[str, dict]]:
    kept = [json.loads(line)["id"] for line in (out / "kept.jsonl").read_text().splitlines()]
    removed = [json.loads(line)["id"] for line in (out / "removed.jsonl").read_text().splitlines()]
    decisions = {d["id"]: d for d in map(json.loads, (out / "decisions.jsonl").read_text().splitlines())}
    return kept, removed, decisions


# -- Video-MME (official layout) -----------------------------------------------------------------------

VMME_OPTS = ["A cat.", "Two dogs.", "Three birds.", "Nothing."]
VMME = {"001": ("vidShortAAA", "short", "Knowledge", [("1", "Counting Problem", "C"), ("2", "OCR Problems", "A"),
                                                         ("3", "Counting Problem", "D")]),
        "002": ("vidLongBBBB", "long", "Sports Competition", [("1", "Temporal Reasoning", "B"),
                                                             ("2", "OCR Problems", "B"), ("3", "Action Reasoning", "A")]),
        "003": ("vidGoneCCCC", "medium", "Film & Television", [("1", "Object Recognition", "D"),
                                                               ("2", "Object Reasoning", "C"),
                                                               ("3", "Information Synopsis", "A")])}
VMME_PLAN = {"001-1": "right", "001-2": "rank", "001-3": "garbage", "002-1": "wrong", "002-2": "name",
             "002-3": "rank-wrong", "003-1": "not-first", "003-2": "wrong", "003-3": "not-first"}


def vq(qid: str) -> str:
    return f"What happens in clip {qid}?"


@pytest.fixture(scope="module")
def videomme(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("videomme")
    records = [{"video_id": no, "duration": dur, "domain": dom, "sub_category": "x", "videoID": vid,
                "url": f"https://www.youtube.com/watch?v={vid}",
                "questions": [{"question_id": f"{no}-{q}", "task_type": task, "question": vq(f"{no}-{q}"),
                               "options": [f"{LETTERS[i]}. {o}" for i, o in enumerate(VMME_OPTS)], "answer": ans}
                              for q, task, ans in qs]} for no, (vid, dur, dom, qs) in VMME.items()]
    (root / "videomme.json").write_text(json.dumps(records))
    (root / "subtitle").mkdir()
    (root / "subtitle" / "vidShortAAA.srt").write_text("1\n00:00:00,000 --> 00:00:01,000\nhello there\n\n")
    (root / "data").mkdir()
    for vid in ("vidShortAAA", "vidLongBBBB"):
        make_video(root / "data" / f"{vid}.mp4", seconds=2, fps=10, gop=10, size=(64, 48))
    return root


def vmme_script() -> Script:
    answers = {vq(f"{no}-{q}"): VMME_OPTS[LETTERS.index(a)] for no, (_, _, _, qs) in VMME.items() for q, _, a in qs}
    return Script(answers, {"*": {vq(k): b for k, b in VMME_PLAN.items()}})


def qad_expected(seeds: int, threshold: int) -> set[str]:
    """What neptune-qad must remove from the Video-MME fixture under VMME_PLAN."""
    out = {"001-1", "001-2", "002-2"}  # right, a correct ranking, the option named in free text
    for qid in ("003-1", "003-3"):  # right only in the seeds that do not show the answer first
        answer = next(VMME_OPTS.index(VMME_OPTS[LETTERS.index(a)]) for q, _, a in VMME[qid[:3]][3] if q == qid[-1])
        right = sum(seed_order(vq(qid), VMME_OPTS, s)[0] != answer for s in range(seeds))
        if right >= threshold:
            out.add(qid)
    return out


@pytest.mark.slow
def test_neptune_qad_on_videomme_exact_sets_per_threshold_and_seed_count(tmp_path, env, videomme):
    assert qad_expected(3, 2) != qad_expected(3, 3)  # the fixture has a 2-of-3 question
    with FakeOpenAIServer(answer=vmme_script()) as server:
        for seeds, threshold in ((3, 2), (3, 3), (1, 1)):
            out = tmp_path / f"out-{seeds}-{threshold}"
            done = lvu("build", "filter", "videomme", "--data", str(videomme), "--rule", "neptune-qad", "-o", str(out),
                       "--seeds", str(seeds), "--threshold", str(threshold), *model_args(server, "gpt"), env=env)
            assert done.returncode == 0, done.stdout + done.stderr
            kept, removed, decisions = outputs(out)
            assert set(removed) == qad_expected(seeds, threshold)
            assert set(kept) == set(decisions) - set(removed) and len(decisions) == 9
            assert f"{9 * seeds} model calls" in done.stdout
        n_requests = len(server.requests)
    assert n_requests == 9 * 3 + 9 * 3 + 9
    garbage = decisions["001-3"]
    assert garbage["status"] == "unchecked" and garbage["votes"][0]["ranking"] is None  # kept, but not a pass
    assert garbage["votes"][0]["correct"] is None and garbage["votes"][0]["reply"].startswith("I cannot say")
    evidence = read_samples(tmp_path / "out-3-2" / "removed.jsonl")[0]
    first = next(s for s in evidence if s.id == "001-2").extra["blind_filter"]
    assert first["rule"] == "neptune-qad" and len(first["votes"]) == 3
    assert all(v["prompt"].startswith("Instructions:") and v["reply"].startswith("ANSWER:") for v in first["votes"])
    summary = json.loads((tmp_path / "out-3-2" / "summary.json").read_text())
    # 001-3's reply named no option: unchecked, so the rates are over the 8 questions the rule judged
    assert summary["groups"]["all"]["removed_pct"] == pytest.approx(100 * 5 / 8) and summary["groups"]["all"]["n"] == 8
    assert summary["groups"]["duration: short"]["removed_pct"] == pytest.approx(100 * 2 / 2)
    assert (summary["checked"], summary["unchecked"]) == (8, 1)


@pytest.mark.slow
def test_text_only_and_the_kept_file_runs_under_jsonl_with_its_breakdowns(tmp_path, env, videomme):
    out = tmp_path / "out"
    with FakeOpenAIServer(answer=vmme_script()) as server:
        done = lvu("build", "filter", "videomme", "--data", str(videomme), "--rule", "text-only", "-o", str(out),
                   "--plot", str(out / "removed.png"), *model_args(server, "gpt"), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    kept, removed, _ = outputs(out)
    # original option order: 003-1's answer (D) is not shown first, 003-3's (A) is
    assert set(removed) == {"001-1", "001-2", "002-2", "003-1"}
    assert (out / "removed.png").stat().st_size > 0 and "task_type: OCR Problems" in done.stdout
    samples, bad = read_samples(out / "kept.jsonl")
    assert not bad and [s.id for s in samples] == kept
    original = {s.id: s for s in make_benchmark("videomme", {"data": str(videomme)}).load()[0]}
    for s in samples:  # every field as loaded, paths absolute
        assert s.model_dump() == original[s.id].model_dump()
    from lvu.api import run as run_engine

    summary = run_engine("jsonl", "random", settings={"data": str(out / "kept.jsonl"), "frames": 2},
                         results_dir=tmp_path / "runs", report=False, show_progress=False)
    titles = {t.title for t in summary.tables}
    assert {"duration", "domain", "task_type"} <= titles
    from lvu.runs.store import Store

    store = Store(tmp_path / "runs")
    results = store.results(summary.run_id)
    store.close()
    assert sorted(r.sample_id for r in results) == sorted(kept)
    assert all((r.error is None) == Path(original[r.sample_id].video.path).exists() for r in results)


# -- LVBench (official layout), two models --------------------------------------------------------------

LVB = [("55", "What year is on the caption?", "D"), ("56", "Who speaks first?", "A"), ("57", "What is the score?", "B"),
       ("58", "Where is the boat?", "C"), ("59", "What colour is the car?", "A"), ("60", "Which bird lands?", "B")]
LVB_OPTS = ["one", "two", "three", "four"]
LVB_PLAN = {"gpt": dict(zip([q for _, q, _ in LVB], ["right", "right", "wrong", "right", "rank", "name"])),
            "glm": dict(zip([q for _, q, _ in LVB], ["right", "wrong", "wrong", "garbage", "right", "right"]))}


@pytest.fixture()
def lvbench(tmp_path) -> Path:
    qas = [{"uid": uid, "question": q + "".join(f"\n({LETTERS[i]}) {o}" for i, o in enumerate(LVB_OPTS)),
            "answer": a, "question_type": ["reasoning"] if int(uid) % 2 else ["entity recognition"],
            "time_reference": "00:15-00:19"} for uid, q, a in LVB]
    info = {"duration_minutes": 61.5, "fps": 5.0, "resolution": {"width": 96, "height": 64}}
    lines = [json.dumps({"key": key, "type": kind, "qa": qas[i::2], "video_info": info})
             for i, (key, kind) in enumerate((("vidONE00001", "cartoon"), ("vidTWO00002", "sport")))]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "video_info.meta.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


@pytest.mark.slow
def test_lvbench_rule_and_text_only_with_two_models(tmp_path, env, lvbench):
    answers = {q: LVB_OPTS[LETTERS.index(a)] for _, q, a in LVB}
    with FakeOpenAIServer(answer=Script(answers, LVB_PLAN)) as server:
        both = lvu("build", "filter", "lvbench", "--data", str(lvbench), "--rule", "lvbench", "-o", str(tmp_path / "a"),
                   *model_args(server, "gpt", "glm"), env=env)
        anyone = lvu("build", "filter", "lvbench", "--data", str(lvbench), "--rule", "text-only", "-o",
                     str(tmp_path / "b"), *model_args(server, "gpt", "glm"), env=env)
    assert both.returncode == 0 and anyone.returncode == 0, both.stderr + anyone.stderr
    _, removed, decisions = outputs(tmp_path / "a")
    assert set(removed) == {"55", "59", "60"}  # both right; a ranking and a named option count as answers
    assert decisions["56"]["reason"] == "the models' answers differ"
    assert decisions["57"]["reason"] == "the shared answer is wrong"
    assert decisions["58"]["status"] == "unchecked"  # one right, one unread: the unread might have agreed
    assert decisions["58"]["reason"] == "no decision: 1 of 2 replies named no option"
    assert [v["model"] for v in decisions["55"]["votes"]] == ["gpt", "glm"]
    assert set(outputs(tmp_path / "b")[1]) == {"55", "56", "58", "59", "60"}  # any model right


# -- Neptune (official layout), 5 options, other seed counts ---------------------------------------------

NEP_OPTS = ["One", "Two", "Three", "Four", "Five"]


@pytest.fixture()
def neptune(tmp_path) -> Path:
    recs = []
    for k in range(6):
        r = {"key": f"vidNEP000{k % 2}/{k}", "video_id": f"vidNEP000{k % 2}", "question": f"How many cats in scene {k}?",
             "answer": NEP_OPTS[k % 5], "answer_id": k % 5, "question type": ("Counting", "Temporal Ordering")[k % 2]}
        recs.append({**r, **{f"answer_choice_{i}": o for i, o in enumerate(NEP_OPTS)}})
    (tmp_path / "neptune_full.json").write_text(json.dumps(recs))
    return tmp_path


@pytest.mark.slow
def test_neptune_qad_with_five_options_five_seeds_and_a_seed_base(tmp_path, env, neptune):
    answers = {f"How many cats in scene {k}?": NEP_OPTS[k % 5] for k in range(6)}
    plan = {"*": {q: ("not-first" if k < 4 else "garbage") for k, q in enumerate(answers)}}
    with FakeOpenAIServer(answer=Script(answers, plan)) as server:
        done = lvu("build", "filter", "neptune", "--data", str(neptune), "--rule", "neptune-qad", "-o",
                   str(tmp_path / "o"), "--seeds", "5", "--threshold", "4", "--seed-base", "7",
                   *model_args(server, "gemini"), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    _, removed, decisions = outputs(tmp_path / "o")
    expected = {f"vidNEP000{k % 2}/{k}" for k, q in enumerate(answers) if k < 4
                and sum(seed_order(q, NEP_OPTS, s)[0] != k % 5 for s in range(7, 12)) >= 4}
    assert set(removed) == expected
    assert [v["seed"] for v in next(iter(decisions.values()))["votes"]] == [7, 8, 9, 10, 11]
    assert all(v["ranking"] is None for k, d in decisions.items() if k.endswith(("/4", "/5")) for v in d["votes"])


# -- JSONL: --asr, kill -9 and resume ------------------------------------------------------------------

def jsonl_data(root: Path, n: int, *, subtitles: bool = False) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    samples = []
    for i in range(n):
        sub = None
        if subtitles:
            (root / f"s{i}.srt").write_text(f"1\n00:00:00,000 --> 00:00:01,000\nspoken clue {i}\n\n")
            sub = SubtitleRef(path=f"s{i}.srt")
        samples.append(Sample(id=f"q{i:03d}", benchmark="mine", video=VideoRef(path=f"v{i % 3}.mp4", duration=60.0),
                              question=f"Question number {i}?", options=["w", "x", "y", "z"], answer=i % 4,
                              labels={"group": f"g{i % 2}"}, subtitles=sub))
    return write_samples(root / "mine.jsonl", samples)


@pytest.mark.slow
def test_asr_puts_the_transcript_in_the_prompt_and_is_another_job(tmp_path, env):
    data = jsonl_data(tmp_path / "d", 4, subtitles=True)
    answers = {f"Question number {i}?": "wxyz"[i % 4] for i in range(4)}

    def answer(body):  # right only when the transcript is in the prompt
        text = user_text(body)
        plan = "right" if "spoken clue" in text else "wrong"
        return Script(answers, {"*": {q: plan for q in answers}})(body)

    with FakeOpenAIServer(answer=answer) as server:
        plain = lvu("build", "filter", str(data), "--rule", "neptune-qad", "-o", str(tmp_path / "p"),
                    *model_args(server, "m"), env=env)
        asr = lvu("build", "filter", str(data), "--rule", "neptune-qad", "--asr", "-o", str(tmp_path / "a"),
                  *model_args(server, "m"), env=env)
        text = lvu("build", "filter", str(data), "--rule", "text-only", "--asr", "-o", str(tmp_path / "t"),
                   *model_args(server, "m"), env=env)
        prompts = [user_text(r.body) for r in server.requests if r.body]
    assert plain.returncode == asr.returncode == text.returncode == 0, plain.stderr + asr.stderr + text.stderr
    assert outputs(tmp_path / "p")[1] == [] and len(outputs(tmp_path / "a")[1]) == 4
    assert len(outputs(tmp_path / "t")[1]) == 4 and "0 decisions from the ledger" in asr.stdout
    assert any("TRANSCRIPT: spoken clue 2\n\nQUESTION: Question number 2?" in p for p in prompts)
    assert any(p.startswith("This video's subtitles are listed below:\nspoken clue 1\n") for p in prompts)


@pytest.mark.slow
def test_kill_9_mid_filter_then_resume_gives_the_same_files(tmp_path, env):
    n = 30
    data = jsonl_data(tmp_path / "d", n)
    answers = {f"Question number {i}?": "wxyz"[i % 4] for i in range(n)}
    plan = {"*": {q: ("right", "rank-wrong", "not-first", "garbage")[zlib.crc32(q.encode()) % 4] for q in answers}}
    with FakeOpenAIServer(answer=Script(answers, plan), latency=0.05) as server:
        base = ["build", "filter", str(data), "--rule", "neptune-qad", "--concurrency", "2", *model_args(server, "m")]
        killed_env = {**env, "LVU_RESULTS_DIR": str(tmp_path / "killed")}
        db = tmp_path / "killed" / "lvu.sqlite"
        proc = subprocess.Popen([sys.executable, "-m", "lvu.cli", *base, "-o", str(tmp_path / "k")], env=killed_env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while len(committed(db)) < 6 and proc.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, "the filter ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        before = committed(db)
        assert 6 <= len(before) < n and not (tmp_path / "k").exists()
        calls_before = len(server.requests)
        resumed = lvu(*base, "-o", str(tmp_path / "k"), env=killed_env)
        resumed_calls = len(server.requests) - calls_before
        clean = lvu(*base, "-o", str(tmp_path / "c"), env={**env, "LVU_RESULTS_DIR": str(tmp_path / "clean")})
    assert resumed.returncode == 0 and clean.returncode == 0, resumed.stderr + clean.stderr
    assert all(committed(db)[k] == v for k, v in before.items())  # nothing committed was asked again
    assert resumed_calls == 3 * (n - len(before)) and f"{len(before)} decisions from the ledger" in resumed.stdout
    for name in ("kept.jsonl", "removed.jsonl", "decisions.jsonl"):
        assert (tmp_path / "k" / name).read_bytes() == (tmp_path / "c" / name).read_bytes()
    kept, removed, _ = outputs(tmp_path / "c")
    assert removed and kept and len(kept) + len(removed) == n


# -- the haystack --------------------------------------------------------------------------------------

@pytest.mark.slow
def test_haystack_text_only_removes_exactly_the_scripted_half(tmp_path, env):
    samples = make_benchmark("haystack").load()[0]  # generated into this test's LVU_CACHE_DIR
    right = {s.id for s in samples if zlib.crc32((s.question + "|".join(s.options)).encode()) % 2 == 0}

    def answer(body):
        text = user_text(body)
        s = next(s for s in samples if s.question in text and shown_options(text) == s.options)
        key = zlib.crc32((s.question + "|".join(s.options)).encode()) % 2
        return LETTERS[s.answer if key == 0 else (s.answer + 1) % len(s.options)]

    with FakeOpenAIServer(answer=answer) as server:
        done = lvu("build", "filter", "haystack", "--rule", "text-only", "-o", str(tmp_path / "h"),
                   *model_args(server, "m"), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    kept, removed, decisions = outputs(tmp_path / "h")
    assert set(removed) == right and len(kept) + len(removed) == len(samples)
    assert all(d["votes"][0]["correct"] is False and d["status"] == "kept" for k, d in decisions.items() if k not in right)
    assert "kind: read" in done.stdout and f"{len(samples)} model calls" in done.stdout


@pytest.mark.slow
def test_bad_arguments_are_one_line_errors(tmp_path, env):
    from lvu.construct.filtering import FilterSettings
    from lvu.cli.build_filter import split_model_args
    from lvu.errors import LvuError

    assert split_model_args(["a", "b"], {"k": 1, "2.k": 2, "1.x": 3}) == [{"k": 1, "x": 3}, {"k": 2}]
    with pytest.raises(LvuError, match="there is no model 3"):
        split_model_args(["a", "b"], {"3.model": "x"})
    for settings, n, message in ((FilterSettings("bogus"), 1, "unknown"), (FilterSettings("neptune-qad"), 0, "no model"),
                                 (FilterSettings("neptune-qad", seeds=3, threshold=4), 1, "between 1 and --seeds 3"),
                                 (FilterSettings("neptune-qad", seeds=0, threshold=0), 1, "at least 1 seed")):
        with pytest.raises(LvuError, match=message):
            settings.check(n)
    done = lvu("build", "filter", "haystack", "--rule", "neptune-qad", "-m", "random", "--threshold", "5",
               "-o", str(tmp_path / "o"), env=env)
    assert done.returncode == 2 and "--threshold 5 must be between 1 and --seeds 3" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


@pytest.mark.slow
def test_a_failed_call_leaves_its_question_undecided_until_the_next_run(tmp_path, env, videomme):
    with FakeOpenAIServer(answer=vmme_script()) as server:
        args = ["build", "filter", "videomme", "--data", str(videomme), "--rule", "text-only", "-o", str(tmp_path / "o"),
                "--concurrency", "1", *model_args(server, "gpt"), "-a", "max_retries=0"]
        server.script(*[None] * 3, "500")
        failed = lvu(*args, env=env)
        kept, removed, decisions = outputs(tmp_path / "o")
        assert failed.returncode == 1 and "1 question(s) undecided" in failed.stderr
        (undecided,) = [k for k, d in decisions.items() if d["status"] == "failed"]
        assert undecided not in kept + removed and len(kept + removed) == 8
        again = lvu(*args, env=env)
    assert again.returncode == 0 and "1 model calls, 8 decisions from the ledger" in again.stdout
    kept, removed, decisions = outputs(tmp_path / "o")
    assert set(removed) == {"001-1", "001-2", "002-2", "003-1"} and len(kept) == 5


@pytest.mark.slow
def test_a_dead_endpoint_stops_the_filter_and_writes_nothing(tmp_path, env, videomme):
    with FakeOpenAIServer(answer=vmme_script(), fault_rate=1.0, faults=("500",)) as server:
        done = lvu("build", "filter", "videomme", "--data", str(videomme), "--rule", "text-only", "-o", str(tmp_path / "o"),
                   "--concurrency", "1", *model_args(server, "gpt"), "-a", "max_retries=0", env=env)
        calls = len(server.chat_requests())
    assert done.returncode == 1 and "8 questions in a row failed" in done.stderr and "no file written" in done.stderr
    assert calls == 8 and not (tmp_path / "o").exists()


def test_unreadable_records_are_named_not_dropped_silently(tmp_path):
    from typer.testing import CliRunner

    from lvu.cli import app

    data = tmp_path / "bad.jsonl"
    data.write_text('{"id": "a", "video": "v.mp4", "question": "Q?", "options": ["x", "y"], "answer": 0}\n'
                    "{not json\n", encoding="utf-8")
    out = CliRunner().invoke(app, ["build", "filter", str(data), "--rule", "text-only", "-m", "random",
                                   "-o", str(tmp_path / "out"), "--results-dir", str(tmp_path / "r")])
    assert out.exit_code == 0, out.output
    assert "1 unreadable record(s) are in neither file" in out.output and "bad.jsonl:2" in out.output


@pytest.mark.slow
def test_a_filter_whose_replies_name_no_option_says_so_and_fails(tmp_path, env):
    """#27: a base model answering `(1)\\n(2)\\n(3)` had every reply unparsable, and the filter said
    `removed: 0 of 60 checked`, every question kept as "no model correct without the video"."""
    data = jsonl_data(tmp_path / "d", 6)
    with FakeOpenAIServer(answer="(1)\n(2)\n(3)\n(4)") as server:
        done = lvu("build", "filter", str(data), "--rule", "text-only", "-o", str(tmp_path / "f"),
                   *model_args(server, "base"), env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "6 of 6 replies named no option (6 question(s) kept unchecked), e.g. '(1)\\n(2)\\n(3)\\n(4)'" in done.stderr
    assert "error: most replies named no option" in done.stderr and "Traceback" not in done.stderr
    kept, removed, decisions = outputs(tmp_path / "f")
    assert len(kept) == 6 and removed == []  # kept, as the unchecked are, but never called checked
    assert {d["status"] for d in decisions.values()} == {"unchecked"}
    assert all(d["reason"] == "no decision: 1 of 1 replies named no option" for d in decisions.values())
    summary = json.loads((tmp_path / "f" / "summary.json").read_text())
    assert (summary["checked"], summary["unchecked"], summary["unparsable_replies"]) == (0, 6, 6)


@pytest.mark.slow
def test_a_few_unread_replies_are_counted_apart(tmp_path, env):
    data = jsonl_data(tmp_path / "d", 4)
    answers = {f"Question number {i}?": "wxyz"[i % 4] for i in range(4)}

    def answer(body):  # q000 right (removed), q001 unreadable, q002/q003 wrong (kept, checked)
        text = user_text(body)
        q = next(k for k in answers if k in text)
        return {"Question number 0?": "A", "Question number 1?": "no idea"}.get(q, "A")

    with FakeOpenAIServer(answer=answer) as server:
        done = lvu("build", "filter", str(data), "--rule", "text-only", "-o", str(tmp_path / "f"),
                   *model_args(server, "m"), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "removed: 1 of 3 checked questions" in " ".join(done.stdout.split())
    assert "unchecked: 1 asked, but the replies named no option" in " ".join(done.stdout.split())
    kept, removed, decisions = outputs(tmp_path / "f")
    assert removed == ["q000"] and decisions["q001"]["status"] == "unchecked" and "q001" in kept


def test_decisions_keep_a_short_reply_the_ledger_the_whole_one():
    """#27: each raw reply was stored three times (decisions, removed, ledger); decisions.jsonl now keeps a short form."""
    from lvu.construct.filter_files import SHORT_REPLY, _short_vote

    vote = {"model": {"model": "m"}, "seed": None, "reply": "x" * 5000, "ranking": None, "correct": None}
    short = _short_vote(vote)["reply"]
    assert short.startswith("x" * SHORT_REPLY) and len(short) < SHORT_REPLY + 80 and "5000 characters" in short
    assert _short_vote({**vote, "reply": "B"})["reply"] == "B"


@pytest.mark.slow
def test_a_filter_of_another_input_into_the_same_folder_is_refused_unless_replace(tmp_path, env):
    """#27 item 3 for `lvu build filter`: other input into an existing -o replaced its files silently."""
    first, other = jsonl_data(tmp_path / "a", 4), jsonl_data(tmp_path / "b", 2)
    with FakeOpenAIServer(answer="A") as server:
        assert lvu("build", "filter", str(first), "--rule", "text-only", "-o", str(tmp_path / "f"),
                   *model_args(server, "m"), env=env).returncode == 0
        before = (tmp_path / "f" / "kept.jsonl").read_text()
        refused = lvu("build", "filter", str(other), "--rule", "text-only", "-o", str(tmp_path / "f"),
                      *model_args(server, "m"), env=env)
        assert refused.returncode == 2 and "--replace" in refused.stderr and "Traceback" not in refused.stderr
        assert (tmp_path / "f" / "kept.jsonl").read_text() == before
        replaced = lvu("build", "filter", str(other), "--rule", "text-only", "-o", str(tmp_path / "f"), "--replace",
                       *model_args(server, "m"), env=env)
        assert replaced.returncode == 0 and "--replace: rebuilding" in replaced.stdout
