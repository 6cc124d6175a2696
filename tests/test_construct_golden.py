"""Golden outputs of every `lvu build ...` pipeline: each command, run through the public CLI on small
generated inputs with scripted models (tests/golden/_builds.py), must write what commit 4b1c0a2 wrote
— the same files (new ones may appear), the same normalised text, the same decoded video and sound.
The expected digests are tests/golden/construct_outputs.json, recorded from 4b1c0a2 by
tests/golden/record_construct_outputs.py; a difference names the command and the file.

Covered: build neptune (OCR captioner, Whisper ASR, the scripted LLM behind the fake OpenAI server),
build filter with each rule (neptune-qad, lvbench, text-only), build needle --task nqa / order /
count, build ladder on the nqa build, build subsets on the Neptune build. About 15 s on 2 CPU cores."""

from __future__ import annotations

import json

import pytest
from golden._builds import EXPECTED, build_env, differences, run_and_digest

RECORDED_FROM = "4b1c0a2"

EXPECTED_COMMANDS = json.loads(EXPECTED.read_text(encoding="utf-8"))["commands"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("golden")
    with build_env(root):
        return run_and_digest(root, keep_going=True)  # a failed command is reported by its own test


def test_the_expected_digests_were_recorded_from_the_commit_before_the_refactor():
    recorded = json.loads(EXPECTED.read_text(encoding="utf-8"))["recorded_from"]
    assert recorded["commit"].startswith(RECORDED_FROM) and not recorded["src_modified"], (
        f"{EXPECTED} was recorded from {recorded}, not a clean {RECORDED_FROM}: re-record only on purpose "
        "(tests/golden/record_construct_outputs.py says how)")
    assert set(EXPECTED_COMMANDS) == {"neptune", "filter neptune-qad", "filter lvbench", "filter text-only",
                                      "needle nqa", "needle order", "needle count", "ladder", "subsets"}
    for name, want in EXPECTED_COMMANDS.items():  # each command wrote what it is meant to, and it is compared
        videos = [f for f, d in want["hashes"].items() if d.startswith("video:")]
        assert want["hashes"] and set(want["hashes"]) <= set(want["files"]), name
        assert bool(videos) == (name.startswith(("neptune", "needle", "ladder", "subsets"))), name


@pytest.mark.parametrize("command", list(EXPECTED_COMMANDS))
def test_outputs_are_those_of_the_commit_before_the_refactor(built, command):
    assert set(built) == set(EXPECTED_COMMANDS), "the builds run are not the ones recorded"
    lines = differences({command: EXPECTED_COMMANDS[command]}, built)
    if lines:
        pytest.fail(f"{command!r}: outputs changed since {RECORDED_FROM} (command: file, expected and got digests, "
                    "the command run):\n" + "\n".join(lines), pytrace=False)
