"""`lvu build needle --questions llm`: MLVU's Needle QA questions written by a model from each needle's
caption with the prompt of its Figure 7 (paper App. E.4), against a scripted OpenAI-compatible server:
the prompt is the paper's text byte for byte, a needle in several videos is asked once, a question is
a sample, a malformed reply is asked once more, a needle without a caption is one line, a re-run asks
nothing, options carry no case cue and answer positions are planned, not the model's."""

from __future__ import annotations

import collections
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lvu.benchmarks.jsonl import read_samples
from lvu.cli import app
from lvu.construct.needle_llm import (FIGURE_7, JSON_FORMAT, NQA_PROMPT, answer_positions, arrange,
                                      format_nqa_prompt, parse_nqa, same_case)
from lvu.construct.needle_pipeline import NeedlePipeline
from lvu.construct.neptune_parse import PREVIOUS_REPLY_HEADER, RETRY_MARKER, ReplyParseError
from lvu.errors import LvuError
from lvu.models.testing_server import FakeOpenAIServer
from needle_videos import needle_media

CAPTIONS = {"making_jewelry": "A woman threads red beads onto a thin wire at a wooden table, then holds up a bracelet.",
            "green_card": "A wide green card lies on a black background."}
TEXT_CAPTION = 'A title card showing the text "CEDAR".'
# sha256 (16 hex digits) and length of the prompt: a change changes every question unit's key
PROMPT_PIN = ("432a56f9df91b991", 1230)


def _paper_figure_7() -> list[str] | None:
    seeds = Path(os.environ.get("LVU_PAPERS_DIR", Path(__file__).resolve().parents[2] / "shared" / "seeds"))
    for path in sorted(seeds.glob("*.txt")) if seeds.is_dir() else []:
        text = path.read_text()
        if "Prompt for Generating Needle Questions" in text:
            block = text.split("Prompt for Generating Needle Questions", 1)[1].split("Figure 7:", 1)[0]
            return [line for line in block.splitlines() if line.strip()]
    return None


PAPER = _paper_figure_7()


# ---- a scripted model: replies by the caption at the prompt's end -----------------------------------


def question(text: str, options: list[str], answer: Any) -> dict[str, Any]:
    return {"question": text, "options": options, "answer": answer}


GOOD = {
    CAPTIONS["making_jewelry"]: json.dumps([
        question("What does the woman thread onto the wire at the wooden table?",
                 ["BEADS", "buttons", "pearls of glass", "shells", "seeds"], "BEADS"),
        question("What colour are the beads she threads?", ["red", "blue", "green", "white"], "red"),
        question("What does she hold up at the end?", ["a necklace", "a bracelet", "a ring", "an earring"],
                 "a bracelet")]),
    CAPTIONS["green_card"]: "Here you go:\n" + json.dumps([
        question("What colour is the wide card on the black background?", ["Red", "Green", "Blue", "Yellow"], "B")]),
    TEXT_CAPTION: "```json\n" + json.dumps({"questions": [
        question("Which word does the title card show?", ["CEDAR", "maple", "birch", "pine"], "CEDAR"),
        question("What is shown on the card?", ["a word", "a face", "a map", "a clock"], "a word")]}) + "\n```",
}
N_QUESTIONS = {"making-jewelry": 3, "green-card": 1, "cedar": 2}


class Script:
    """Answers the NQA prompt by its caption (`replies[caption]`: one reply, or a list taken in order,
    the last repeating) and the frame caption prompt with a fixed caption; records what it was asked."""

    def __init__(self, replies: dict[str, Any]) -> None:
        self.replies, self.asked = replies, collections.Counter()
        self.prompts: list[str] = []

    def __call__(self, body: dict[str, Any]) -> str:
        content = body["messages"][-1]["content"]
        text = content if isinstance(content, str) else "\n".join(p.get("text", "") for p in content)
        self.prompts.append(text)
        if not text.startswith(FIGURE_7[0]):
            return "Question(Text): Is there any text? What does it say?\nAnswer: No.\nCaption: A green card on black."
        caption = text.split(FIGURE_7[3] + "\n", 1)[1].split(PREVIOUS_REPLY_HEADER, 1)[0]
        reply = self.replies[caption]
        if isinstance(reply, list):
            reply = reply[min(self.asked[caption], len(reply) - 1)]
        self.asked[caption] += 1
        return reply


@pytest.fixture(scope="module")
def media(tmp_path_factory) -> dict[str, Path]:
    m = needle_media(tmp_path_factory.mktemp("needle-llm"))
    for stem, caption in CAPTIONS.items():
        (m["needles"] / f"{stem}.caption").write_text(caption + "\n")
    return m


def cli(*argv: str) -> Any:
    return CliRunner().invoke(app, list(argv))


def error_of(result: Any) -> str:
    """The one-line LvuError a command stopped with (`lvu` prints it as `error: ...`, exit 2)."""
    assert isinstance(result.exception, LvuError), (result.output, result.exception)
    assert "\n" not in str(result.exception)
    return str(result.exception)


def needle_argv(media: dict[str, Path], out: Path, server: FakeOpenAIServer | None, *extra: str) -> list[str]:
    model = ["--questions", "llm", "--llm", "openai", "--llm-arg", "model=setter", "--llm-arg",
             f"base_url={server.base_url}", "--llm-arg", "cache=false"] if server is not None else []
    return ["build", "needle", "-b", str(media["bg"]), "-n", str(media["needles"]), "--needle-seconds", "1.5",
            "--depths", "0,25,50,75,100", "--lengths", "12", "--workers", "1", *model, *extra, "-o", str(out)]


@pytest.fixture(scope="module")
def built(media, tmp_path_factory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("built") / "nqa"
    script = Script(GOOD)
    with FakeOpenAIServer(answer=script) as server:
        first = cli(*needle_argv(media, out, server))
        assert first.exit_code == 0, (first.output, first.exception)
        calls = len(server.chat_requests())
        jsonl = (out / "needle.jsonl").read_bytes()
        again = cli(*needle_argv(media, out, server))
        assert again.exit_code == 0, again.output
        return {"out": out, "calls": calls, "calls_after_rerun": len(server.chat_requests()), "jsonl": jsonl,
                "rerun_jsonl": (out / "needle.jsonl").read_bytes(), "rerun_output": again.output,
                "output": first.output, "prompts": list(script.prompts), "server": server.base_url}


# ---- the prompt: MLVU Figure 7 ------------------------------------------------------------------------


def test_the_prompt_is_figure_7_byte_for_byte_then_lvus_schema_and_the_caption():
    assert (hashlib.sha256(NQA_PROMPT.encode()).hexdigest()[:16], len(NQA_PROMPT)) == PROMPT_PIN
    sent = format_nqa_prompt("  A dog runs {fast}\n on a beach. ")
    assert sent == (f"{FIGURE_7[0]}\n\n{FIGURE_7[1]}\n\n{FIGURE_7[2]}\n{JSON_FORMAT}\n\n{FIGURE_7[3]}\n"
                    "A dog runs {fast} on a beach.")  # the caption last, braces kept, whitespace folded
    assert sent.index(FIGURE_7[2]) < sent.index(JSON_FORMAT) < sent.index(FIGURE_7[3])


@pytest.mark.slow
@pytest.mark.skipif(PAPER is None, reason="the MLVU paper text (shared/seeds/*.txt) is not here")
def test_every_printed_line_of_figure_7_is_in_the_prompt_lvu_sends(built):
    assert PAPER is not None and list(FIGURE_7) == PAPER  # the figure's four paragraphs, as printed
    nqa = [p for p in built["prompts"] if p.startswith(FIGURE_7[0])]
    assert len(nqa) == 3
    for prompt in nqa:
        for line in PAPER:
            assert prompt.count(line) == 1, line
        assert prompt.rsplit("\n", 1)[1] in (*CAPTIONS.values(), TEXT_CAPTION)  # the caption after the last line


# ---- the build ------------------------------------------------------------------------------------------


def test_each_needle_is_asked_once_and_each_question_is_a_sample(built):
    assert built["calls"] == 3  # 5 videos, 3 needles: the two shown twice are asked once
    samples = read_samples(built["out"] / "needle.jsonl")[0]
    by_video = collections.defaultdict(list)
    for s in samples:
        by_video[s.id.rsplit("-q", 1)[0]].append(s)
    assert len(by_video) == 5
    expected = {"making-jewelry": ["BEADS", "red", "a bracelet"], "green-card": ["Green"], "cedar": ["CEDAR", "a word"]}
    for video, qs in by_video.items():
        needle = next(n for n in N_QUESTIONS if video.endswith(n))
        assert [s.id for s in qs] == [f"{video}-q{k}" for k in range(1, N_QUESTIONS[needle] + 1)]
        assert len({s.video.path for s in qs}) == 1 and Path(qs[0].video.path).is_file()  # one video per needle
        for s, answer in zip(qs, expected[needle]):
            assert len(s.options) == 4 and len(set(s.options)) == 4
            assert s.options[s.answer].lower() == answer.lower()
            assert s.labels["task"] == "nqa" and s.extra["nqa_question"]["source"] == "llm"
            assert s.extra["nqa_question"]["of"] == len(qs)
    jewelry = next(s for s in samples if s.id.endswith("making-jewelry-q1"))
    assert sorted(jewelry.options) == ["beads", "buttons", "pearls of glass", "shells"]  # no ALL-CAPS answer; 5th dropped
    assert jewelry.extra["nqa_question"]["caption"] == CAPTIONS["making_jewelry"]
    assert jewelry.extra["nqa_question"]["caption_from"].endswith("making_jewelry.caption")
    cedar = next(s for s in samples if s.id.endswith("cedar-q1"))
    assert sorted(cedar.options) == ["birch", "cedar", "maple", "pine"]
    assert cedar.extra["nqa_question"]["caption"] == TEXT_CAPTION
    assert f"{len(samples)} of the samples ask questions --llm wrote from the captions of 3 needle(s)" in built["output"]


def test_a_rerun_asks_nothing_and_writes_the_same_file(built):
    assert built["calls_after_rerun"] == built["calls"]
    assert built["rerun_jsonl"] == built["jsonl"]
    assert "0 videos made; 5 already there" in built["rerun_output"]


@pytest.mark.slow
def test_answer_positions_are_planned_not_the_models(built, media, tmp_path):
    """The answers sit where the plan put them (build.json), whatever place the model gave them."""
    config = json.loads((built["out"] / "build.json").read_text())
    planned = {v["id"]: v["data"]["nqa"]["positions"] for v in config["videos"]}
    samples = read_samples(built["out"] / "needle.jsonl")[0]
    for s in samples:
        video, k = s.id.rsplit("-q", 1)
        assert s.answer == planned[video][int(k) - 1], s.id
    flipped = {c: (json.dumps([{**q, "options": list(reversed(q["options"]))} for q in parse_like(r)]))
               for c, r in GOOD.items()}
    out = tmp_path / "flipped"
    with FakeOpenAIServer(answer=Script(flipped)) as server:
        done = cli(*needle_argv(media, out, server))
        assert done.exit_code == 0, done.output
    other = {s.id: s for s in read_samples(out / "needle.jsonl")[0]}
    for s in samples:
        assert other[s.id].answer == s.answer and other[s.id].options[s.answer] == s.options[s.answer], s.id


def parse_like(reply: str) -> list[dict[str, Any]]:
    """The scripted reply's questions as JSON objects (the answer as text)."""
    return [{"question": q["question"], "options": [q["answer"], *q["distractors"]], "answer": q["answer"]}
            for q in parse_nqa(reply)]


def test_answer_positions_cycle_per_question_slot():
    positions = answer_positions([f"needle-{i}" for i in range(40)], seed=3)
    for slot in range(3):
        assert collections.Counter(p[slot] for p in positions.values()) == {0: 10, 1: 10, 2: 10, 3: 10}
    assert positions == answer_positions([f"needle-{i}" for i in range(40)], seed=3)
    assert positions != answer_positions([f"needle-{i}" for i in range(40)], seed=4)
    assert answer_positions(["a", "b", "a"], seed=0).keys() == {"a", "b"}  # a needle shown twice: one draw


@pytest.mark.slow
def test_switching_to_llm_questions_re_encodes_no_video(media, tmp_path):
    out = tmp_path / "switch"
    done = cli(*needle_argv(media, out, None))
    assert done.exit_code == 0, done.output
    config = json.loads((out / "build.json").read_text())
    assert "questions" not in config["options"] and "captioner" not in config["options"]  # as before the option
    videos = {p.name: p.stat().st_mtime_ns for p in (out / "videos").iterdir()}
    with FakeOpenAIServer(answer=Script(GOOD)) as server:
        refused = cli(*needle_argv(media, out, server))
        assert "option questions: None -> 'llm'" in error_of(refused)
        done = cli(*needle_argv(media, out, server, "--replace"))
    assert done.exit_code == 0, done.output
    assert "0 videos made; 5 already there" in done.output
    assert {p.name: p.stat().st_mtime_ns for p in (out / "videos").iterdir()} == videos
    assert all(s.id.rsplit("-q", 1)[1] in "123" for s in read_samples(out / "needle.jsonl")[0])


# ---- failures ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_malformed_reply_is_asked_once_more_then_the_unit_fails_in_one_line(media, tmp_path):
    three = json.dumps([question("Which colour is the card?", ["red", "green", "blue"], "green")])
    replies = {**GOOD, CAPTIONS["making_jewelry"]: ["Sure! I will write three questions.", GOOD[CAPTIONS["making_jewelry"]]],
               CAPTIONS["green_card"]: [three, three]}
    script = Script(replies)
    out = tmp_path / "bad"
    with FakeOpenAIServer(answer=script) as server:
        done = cli(*needle_argv(media, out, server))
        assert done.exit_code == 1, done.output
        assert script.asked == {CAPTIONS["making_jewelry"]: 2, CAPTIONS["green_card"]: 2, TEXT_CAPTION: 1}
        retry = next(p for p in script.prompts if RETRY_MARKER in p and CAPTIONS["making_jewelry"] in p)
        assert retry.startswith(format_nqa_prompt(CAPTIONS["making_jewelry"]))
        assert "Sure! I will write three questions." in retry and "no JSON" in retry
        failed = [line for line in done.output.splitlines() if line.startswith("failed:")]
        assert len(failed) == 1 and "needle.question" in failed[0] and "green-card" in failed[0]
        assert "malformed reply, also after one retry with the parse error: question 1 has 3 different choices; at " \
               "least 4 are needed" in failed[0]
        assert not (out / "needle.jsonl").exists() and len(list((out / "videos").iterdir())) == 5
        status = cli("build", "status", str(out))
        assert "has 3 different choices; at least 4 are needed" in status.output
        script.replies[CAPTIONS["green_card"]] = GOOD[CAPTIONS["green_card"]]
        calls = len(server.chat_requests())
        done = cli(*needle_argv(media, out, server))
        assert done.exit_code == 0, done.output
        assert len(server.chat_requests()) == calls + 1  # only the failed needle is asked again
    assert "0 videos made; 5 already there" in done.output and (out / "needle.jsonl").is_file()


@pytest.mark.slow
def test_a_needle_without_a_caption_is_one_line_naming_it_and_the_fix(media, tmp_path):
    needles = tmp_path / "needles"
    shutil.copytree(media["needles"], needles)
    (needles / "green_card.caption").unlink()
    (needles / "green_card.txt").write_text("GREEN")  # a text needle, not the card's caption
    out = tmp_path / "out"
    argv = needle_argv(media, out, None, "--questions", "llm", "--llm", "openai", "--llm-arg", "model=x")
    argv[argv.index("-n") + 1] = str(needles)
    env = {**os.environ, "LVU_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "300"}
    done = subprocess.run([sys.executable, "-m", "lvu.cli", *argv], capture_output=True, text=True, env=env,
                          check=False, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and not out.exists(), done.stderr
    assert f"needle {needles / 'green_card.png'} has no caption for --questions llm" in lines[0]
    assert "(green_card.txt beside it is a text needle, not its caption)" in lines[0]
    assert f"write its description to {needles / 'green_card.caption'}" in lines[0]
    assert "--captioner ocr or --vlm MODEL" in lines[0]


def test_a_jsonl_needles_caption_and_its_absence(media, tmp_path):
    shutil.copy(media["needles"] / "making_jewelry.mp4", tmp_path)  # without the .caption beside it
    lines = [{"image": str(media["needles"] / "green_card.png"), "caption": "  A green\ncard. "},
             {"video": "making_jewelry.mp4"},
             {"text": "OWN", "question": "Which word?", "options": ["own", "mine", "yours", "ours"], "answer": 0}]
    source = tmp_path / "needles.jsonl"
    source.write_text("".join(json.dumps(rec) + "\n" for rec in lines))
    options = {"needles": str(source), "questions": "llm", "depths": "0,25,75,100", "lengths": "12",
               "needle_seconds": 1.5}
    with pytest.raises(LvuError, match=rf"needle {source}:2 has no caption .* or a \"caption\" on its JSONL line"):
        NeedlePipeline(options).items([str(media["bg"])])
    lines[1]["caption"] = CAPTIONS["making_jewelry"]
    source.write_text("".join(json.dumps(rec) + "\n" for rec in lines))
    items = NeedlePipeline(options).items([str(media["bg"])])
    marks = {i.data["nqa"]["name"]: i.data["nqa"] for i in items if "nqa" in i.data}
    assert marks["green-card"]["caption"] == "A green card." and marks["green-card"]["caption_from"] == f"{source}:1 caption"
    assert marks["making-jewelry"]["caption"] == CAPTIONS["making_jewelry"]
    own = [i for i in items if i.data["question"]["text"] == "Which word?"]  # its own question: kept, no model
    assert own and all("nqa" not in i.data for i in own) and len(marks) == 2
    marked = [i.data["nqa"] for i in items if "nqa" in i.data]
    assert sum(m["owner"] for m in marked) == len({m["needle"] for m in marked}) == 2  # one owner per needle


@pytest.mark.slow
def test_options_that_do_not_fit_are_refused_before_anything_runs(media, tmp_path):
    with pytest.raises(LvuError, match="questions=llm writes Needle QA questions .task nqa., not task count"):
        NeedlePipeline({"needles": "x", "task": "count", "questions": "llm"})
    for extra, message in ((["--task", "count", "--questions", "llm", "--llm", "x"], "use it with --task nqa"),
                           (["--questions", "llm"], "--questions llm needs --llm MODEL"),
                           (["--llm", "openai"], "--llm is for --questions llm"),
                           (["--questions", "llm", "--llm", "x", "--captioner", "vlm"], "--captioner vlm needs --vlm")):
        assert message in error_of(cli(*needle_argv(media, tmp_path / "o", None, *extra))), extra
        assert not (tmp_path / "o").exists()


# ---- captions made by a model, and `lvu build run needle` ------------------------------------------------


@pytest.mark.slow
def test_vlm_captions_and_build_run_needle(media, tmp_path):
    needles = tmp_path / "needles"
    needles.mkdir()
    shutil.copy(media["needles"] / "green_card.png", needles)  # no caption: the vlm makes one
    (needles / "cedar.txt").write_text("CEDAR")
    card = "A green card on black."
    script = Script({**GOOD, card: GOOD[CAPTIONS["green_card"]]})
    with FakeOpenAIServer(answer=script) as server:
        url = server.base_url
        out = tmp_path / "run"
        done = cli("build", "run", "needle", str(media["bg"]), "-o", str(out), "--opt", f"needles={needles}",
                   "--opt", "questions=llm", "--opt", "captioner=vlm", "--opt", "depths=0,100", "--opt", "lengths=12",
                   "--opt", "needle_seconds=1.5", "-m", "llm=openai", "-a", "llm.model=setter", "-a", f"llm.base_url={url}",
                   "-m", "vlm=openai", "-a", "vlm.model=looker", "-a", f"vlm.base_url={url}", "-a", "vlm.cache=false",
                   "-a", "llm.cache=false")
        assert done.exit_code == 0, done.output
        bodies = [r.body for r in server.chat_requests()]
    assert [b["model"] for b in bodies].count("looker") == 1  # the card: one picture, one frame caption
    samples = read_samples(out / "needle.jsonl")[0]
    green = next(s for s in samples if "green-card" in s.id)
    assert green.extra["nqa_question"]["caption"] == card and "--captioner vlm" in green.extra["nqa_question"]["caption_from"]
    assert len(samples) == 1 + 2


# ---- the reply parser and the options ----------------------------------------------------------------------


def test_parse_nqa_reads_what_models_write_and_refuses_what_a_retry_can_fix():
    [q] = parse_nqa('```json\n{"question": "Q?", "options": ["A. one", "B. two", "C. three", "D. four"], "answer": "C"}\n```')
    assert q == {"question": "Q?", "answer": "three", "distractors": ["one", "two", "four"]}
    four = ["w", "x", "y", "z"]
    assert len(parse_nqa(json.dumps([question(f"Q{i}?", four, "x") for i in range(5)]))) == 3  # the first three
    assert parse_nqa(json.dumps([question("Q?", four, 3)]))[0]["answer"] == "z"
    assert parse_nqa(json.dumps([question("Q?", ["x", "X", "y", "z", "v"], "x.")]))[0]["distractors"] == ["y", "z", "v"]
    for reply, reason in (("no JSON at all", "holds no JSON"), ("[]", "no JSON list of questions"),
                          (json.dumps([question("Q?", ["x", "y", "z"], "x")]), "3 different choices"),
                          (json.dumps([question("Q?", four, "v")]), "is not one of its choices"),
                          (json.dumps([question("", four, "x")]), "no \"question\" text"),
                          (json.dumps(["Q?"]), "is not a JSON object")):
        with pytest.raises(ReplyParseError, match=reason):
            parse_nqa(reply)


def test_options_carry_no_case_cue():
    assert same_case(["Red", "blue", "GREEN", "yellow"]) == ("Red", "Blue", "Green", "Yellow")
    assert same_case(["LIGHTHOUSE", "red kite", "mango", "a bus"]) == ("lighthouse", "red kite", "mango", "a bus")
    assert same_case(["NASA", "ESA", "JAXA", "ISRO"]) == ("NASA", "ESA", "JAXA", "ISRO")  # all alike: kept
    assert same_case(["Paris", "a bridge", "3 boats", "London"]) == ("Paris", "A bridge", "3 boats", "London")
    options, answer = arrange({"answer": "BEADS", "distractors": ["buttons", "shells", "seeds"]}, 2)
    assert (options, answer) == (["buttons", "shells", "beads", "seeds"], 2)
