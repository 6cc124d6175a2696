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
import os
import subprocess
import sys
from pathlib import Path

import pytest
from golden._builds import EXPECTED, differences

TESTS = Path(__file__).resolve().parent

RECORDED_FROM = "4b1c0a2"

EXPECTED_COMMANDS = json.loads(EXPECTED.read_text(encoding="utf-8"))["commands"]


BUILD = """
import json, sys
from pathlib import Path
sys.path[:0] = [sys.argv[1], str(Path(sys.argv[1]) / "golden")]
from golden._builds import build_env, run_and_digest
root = Path(sys.argv[2])
with build_env(root):
    digests = run_and_digest(root, keep_going=True)  # a failed command is reported by its own test
(root / "digests.json").write_text(json.dumps(digests))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    # In a fresh interpreter: what earlier tests left in this process (a Whisper model loaded with
    # other settings, codec state, CPU affinity) must not change what the builds write.
    root = tmp_path_factory.mktemp("golden")
    done = subprocess.run([sys.executable, "-c", BUILD, str(TESTS), str(root)], capture_output=True, text=True,
                          timeout=900, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])])})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((root / "digests.json").read_text())


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


@pytest.mark.slow
@pytest.mark.parametrize("command", list(EXPECTED_COMMANDS))
def test_outputs_are_those_of_the_commit_before_the_refactor(built, command):
    assert set(built) == set(EXPECTED_COMMANDS), "the builds run are not the ones recorded"
    lines = differences({command: EXPECTED_COMMANDS[command]}, built)
    if lines:
        pytest.fail(f"{command!r}: outputs changed since {RECORDED_FROM} (command: file, expected and got digests, "
                    "the command run):\n" + "\n".join(lines), pytrace=False)
