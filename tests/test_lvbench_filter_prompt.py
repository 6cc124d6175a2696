"""The `lvbench` blind-filter rule asks LVBench's own evaluation prompt (the one prompt the paper
prints, Sec. 4.1) without the video — pinned against the paper's text and by a hash — and, as the
paper used two models (GLM-4 and GPT-4), refuses one model unless --allow-single, which
summary.json and the console then say."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lvu.benchmarks.jsonl import write_samples
from lvu.benchmarks.lvbench import PROMPT_INSTRUCTION, LvbenchBenchmark
from lvu.construct.blind import lvbench_prompt
from lvu.construct.blind_rules import FilterSettings, rule_named
from lvu.errors import LvuError
from lvu.models.testing_server import FakeOpenAIServer
from lvu.types import LETTERS, Sample, VideoRef

TEMPLATE = Sample(id="t", benchmark="t", video=VideoRef(path="v.mp4"), question="Question",
                  options=["Option1", "Option2", "Option3", "Option4"], answer=0)
PAPER_LINE = ("Question (A) Option1 (B) Option2 (C) Option3 (D) Option4. Please select the best answer from the "
              "options above and directly provide the letter representing your choice without giving any explanation.")
"""LVBench Sec. 4.1, copied from the paper's text (shared/seeds/002_*.txt)."""


def _paper() -> str | None:
    seeds = Path(os.environ.get("LVU_PAPERS_DIR", Path(__file__).resolve().parents[2] / "shared" / "seeds"))
    found = sorted(seeds.glob("002_*.txt")) if seeds.is_dir() else []
    return found[0].read_text() if found else None


PAPER = _paper()


def test_the_rule_asks_lvbench_evaluation_prompt_pinned_by_hash():
    prompt = lvbench_prompt(TEMPLATE)
    # lvu's LVBench benchmark builds it (one implementation): its prompt, less the frames
    official = LvbenchBenchmark().build_prompt(TEMPLATE, [], [])
    assert prompt.text == official.text and prompt.max_tokens == official.max_tokens == 64
    assert [type(p).__name__ for p in prompt.parts] == ["Text"] and prompt.temperature == 0.0
    assert prompt.text.endswith("\n" + PROMPT_INSTRUCTION)
    assert hashlib.sha256(prompt.text.encode()).hexdigest() == \
        "ee391f90ec5e94c7b1c9c886bb100e6988c42fd0d4062148a25beacad3824045"  # the bytes, newlines included
    # the paper prints it on one line, "Option4." with a period: lvu keeps the release's newlines and
    # adds no period (documented in lvu.benchmarks.lvbench); otherwise the same words, byte for byte
    assert prompt.text.replace("\n", " ") == PAPER_LINE.replace("Option4. Please", "Option4 Please")
    # the prompt's identity is in every decision's key: decisions made with the old prompt are made again
    assert PROMPT_INSTRUCTION in repr(rule_named("lvbench").prompt_identity())
    assert PROMPT_INSTRUCTION not in repr(rule_named("text-only").prompt_identity())


@pytest.mark.skipif(PAPER is None, reason="the LVBench paper text (shared/seeds/002_*.txt) is not here")
def test_the_prompt_is_the_papers():
    assert PAPER_LINE in PAPER  # type: ignore[operator]
    assert PROMPT_INSTRUCTION in PAPER  # type: ignore[operator]


def test_a_question_string_edited_away_from_is_not_shown():
    raw = "What is it?\n(A) one\n(B) two\n(C) three\n(D) four"
    sample = TEMPLATE.model_copy(update={"question": "What is it?", "options": ["one", "two", "three", "four"],
                                         "extra": {"question_raw": raw}})
    assert lvbench_prompt(sample).text.startswith(raw + "\n")
    revised = sample.model_copy(update={"question": "What is shown at 10:00?"})
    assert lvbench_prompt(revised).text.startswith("What is shown at 10:00?\n(A) one\n")
    with_transcript = lvbench_prompt(sample, "hello").text
    assert with_transcript.startswith("This video's subtitles are listed below:\nhello\n" + raw)


def test_one_model_is_refused_unless_allowed():
    with pytest.raises(LvuError, match="GLM-4 and GPT-4.*--allow-single"):
        FilterSettings("lvbench").check(1)
    FilterSettings("lvbench", allow_single=True).check(1)
    FilterSettings("lvbench").check(2)
    FilterSettings("text-only").check(1)  # the other rules were never two-model rules
    assert FilterSettings("lvbench", allow_single=True).params() == FilterSettings("lvbench").params()


def lvu(*argv: str, tmp: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "LVU_CACHE_DIR": str(tmp / "cache"), "LVU_RESULTS_DIR": str(tmp / "results"),
           "LVU_OFFLINE": "1", "LVU_PROGRESS_INTERVAL": "0", "OPENAI_API_KEY": "x", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "lvu.cli", *argv], capture_output=True, text=True, env=env, check=False)


@pytest.fixture()
def data(tmp_path) -> Path:
    samples = [Sample(id=f"q{i}", benchmark="t", video=VideoRef(path=str(tmp_path / "v.mp4"), duration=60.0),
                      question=f"Which is {i}?", options=["w", "x", "y", "z"], answer=i % 4) for i in range(4)]
    return Path(write_samples(tmp_path / "data.jsonl", samples))


def user_text(body: dict) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def right_letter(body: dict) -> str:
    """Right on q0 and q1, wrong on the others."""
    text = user_text(body)
    i = int(text.split("Which is ", 1)[1].split("?", 1)[0])
    return LETTERS[i % 4] if i < 2 else LETTERS[(i + 1) % 4]


@pytest.mark.slow
def test_allow_single_filters_with_the_prompt_and_says_so(tmp_path, data):
    with FakeOpenAIServer(answer=right_letter) as server:
        args = ["build", "filter", str(data), "--rule", "lvbench", "-m", "openai", "-a", "model=m", "-a",
                f"base_url={server.base_url}", "-a", "cache=false", "-o", str(tmp_path / "a")]
        refused = lvu(*args, tmp=tmp_path)
        assert refused.returncode != 0 and "Traceback" not in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1 and "GLM-4 and GPT-4" in refused.stderr
        assert "--allow-single" in refused.stderr
        assert server.n_requests == 0 and not (tmp_path / "a").exists()
        done = lvu(*args, "--allow-single", tmp=tmp_path)
        prompts = sorted(user_text(r.body) for r in server.requests if r.body)
    assert done.returncode == 0, done.stderr
    assert "reduced to one model" in done.stderr
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["single_model"] is True and summary["removed"] == 2
    removed = [json.loads(line)["id"] for line in (tmp_path / "a" / "removed.jsonl").read_text().splitlines()]
    assert removed == ["q0", "q1"]
    assert len(prompts) == 4 and prompts[0] == "Which is 0?\n(A) w\n(B) x\n(C) y\n(D) z\n" + PROMPT_INSTRUCTION
