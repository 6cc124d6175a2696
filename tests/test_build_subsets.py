"""Neptune's hard subsets from a build (lvu.construct.neptune_subsets, `lvu build subsets`): MMA = not
removed by the ASR filter nor the QAD filter; MMH = rater modality not audio-only and not removed by
the QAD filter. A scripted server ranks each question's answer first for exactly the questions meant
to be removed, so the subsets are known exactly."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lvu.cli import app
from lvu.media.testing import make_video
from lvu.models.testing_server import FakeOpenAIServer

ANSWERS = {f"v/{i}": f"answer number {i}" for i in range(1, 7)}
BLIND = {"v/1"}  # the answer is top-ranked without the video
WITH_TRANSCRIPT = {"v/1", "v/2"}  # ... and with the transcript as context
MODALITY = {"v/1": "video-only", "v/2": "audio+video", "v/3": "audio-only", "v/4": "video-only",
            "v/5": "audio+video"}  # v/6: no rater label


def make_build(root: Path, *, labelled: bool) -> Path:
    (root / "asr").mkdir(parents=True)
    (root / "videos").mkdir()
    make_video(root / "videos" / "v.mp4", seconds=2.0, fps=10, gop=10)
    (root / "asr" / "v.srt").write_text("1\n00:00:01,000 --> 00:00:03,000\nthe spoken words\n", encoding="utf-8")
    records = []
    for key, answer in ANSWERS.items():
        n = int(key.split("/")[1])
        options = [f"wrong {n}.{k}" for k in range(4)]
        options.insert(n % 5, answer)
        record = {"key": key, "video_id": "v", "question": f"Question {n}?", "answer": answer,
                  **{f"answer_choice_{k}": o for k, o in enumerate(options)}, "answer_id": n % 5,
                  "question type": "Temporal Ordering", "video_path": "v.mp4"}
        if labelled and key in MODALITY:
            record["modality"] = MODALITY[key]
        records.append(record)
    (root / "neptune_full.json").write_text(json.dumps(records), encoding="utf-8")
    return root


def ranking(body: dict) -> str:
    text = body["messages"][-1]["content"]
    text = text if isinstance(text, str) else "".join(p.get("text", "") for p in text)
    question = re.search(r"QUESTION: Question (\d+)\?", text).group(1)
    key = f"v/{question}"
    letters = dict(re.findall(r"(?:^|Options: )([A-E])\. (.*)$", text, flags=re.M))
    right = next(letter for letter, option in letters.items() if option == ANSWERS[key])
    others = [letter for letter in letters if letter != right]
    removed = key in (WITH_TRANSCRIPT if "TRANSCRIPT:" in text else BLIND)
    order = [right, *others] if removed else [*others, right]
    return "ANSWER: " + " > ".join(order) + ". EXPLANATION: scripted."


@pytest.fixture(autouse=True)
def _key(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "x")


def subsets(root: Path, server: FakeOpenAIServer):
    return CliRunner().invoke(app, ["build", "subsets", str(root), "--llm", "openai", "--llm-arg", "model=fake",
                                    "--llm-arg", f"base_url={server.base_url}", "-q"])


def keys(path: Path) -> list[str]:
    return [r["key"] for r in json.loads(path.read_text())]


@pytest.mark.slow
def test_mma_and_mmh_are_the_papers_definitions(tmp_path: Path) -> None:
    root = make_build(tmp_path / "build", labelled=True)
    with FakeOpenAIServer(answer=ranking) as server:
        out = subsets(root, server)
        assert out.exit_code == 0, out.output
        calls = len(server.chat_requests())
        again = subsets(root, server)  # resumed: every decision from the store (same endpoint, same keys)
        assert again.exit_code == 0 and len(server.chat_requests()) == calls
    assert calls == 6 * 3 * 2  # six questions, three seeds, two filters
    assert keys(root / "neptune_mma.json") == ["v/3", "v/4", "v/5", "v/6"]
    assert keys(root / "neptune_mmh.json") == ["v/2", "v/4", "v/5"]  # v/1 blind, v/3 audio-only, v/6 unlabelled
    assert "MMA: 4 question(s)" in out.output and "1 audio-only dropped" in out.output
    assert "1 question(s) without a rater modality label are left out of MMH" in out.output
    run = CliRunner().invoke(app, ["run", "-b", "neptune", "--data", str(root), "--set", "subset=mma", "-m", "random",
                                   "--results-dir", str(tmp_path / "res"), "--no-report"])
    assert run.exit_code == 0 and "4 samples" in run.output, run.output


@pytest.mark.slow
def test_without_rater_labels_only_mma_is_built(tmp_path: Path) -> None:
    root = make_build(tmp_path / "build", labelled=False)
    with FakeOpenAIServer(answer=ranking) as server:
        out = subsets(root, server)
    assert out.exit_code == 0, out.output
    assert keys(root / "neptune_mma.json") == ["v/3", "v/4", "v/5", "v/6"]
    assert not (root / "neptune_mmh.json").exists()
    assert "no rater modality labels" in out.output


def test_a_folder_without_a_full_set_is_one_line(tmp_path: Path) -> None:
    out = CliRunner().invoke(app, ["build", "subsets", str(tmp_path), "--llm", "random"])
    assert "no neptune_full.json" in str(out.exception)
