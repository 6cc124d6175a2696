"""What `compat=lmms-eval` and its older variants share: the releases each mode reproduces, the
evaluator's reasoning-tag stripping and the MCQ extractor its tasks used before PR #1274.

Checked against the PyPI wheels (task folders videomme, longvideobench, mlvu, lvbench, neptune and
_task_utils, `lmms_eval/evaluator.py`, `lmms_eval/__main__.py`):
- 0.7.2-0.7.3 ("lmms-eval"): Video-MME, LVBench and MLVU read the letter with
  `_task_utils/mcq_extract.extract_mcq_answer` (lvu.scoring.choice.lmms_extract_mcq); the CLI's
  default `--reasoning_tags` strips <think>/<analysis> blocks before any task sees the reply.
- 0.7.0-0.7.1 ("lmms-eval@0.7.1"): the same tasks, but Video-MME and LVBench use the 2024-06
  `extract_characters_regex` (`extract_legacy`) and MLVU the character before the first ")";
  reasoning tags stripped as in 0.7.3.
- 0.6.0-0.6.1 ("lmms-eval@0.6"): the 0.7.1 extractors and no reasoning-tag stripping; no Neptune task.
LongVideoBench and Neptune task code is the same in every one of these releases.
"""

from __future__ import annotations

import re

from lvu.errors import LvuError
from lvu.scoring.vlmevalkit import COMMITS, VLMEVALKIT
from lvu.types import Response

LMMS_EVAL = "lmms-eval"
LMMS_EVAL_0_7_1 = "lmms-eval@0.7.1"
LMMS_EVAL_0_6 = "lmms-eval@0.6"
RELEASES = {LMMS_EVAL: "0.7.2-0.7.3", LMMS_EVAL_0_7_1: "0.7.0-0.7.1", LMMS_EVAL_0_6: "0.6.0-0.6.1"}
"""compat value -> the lmms-eval releases (PyPI) whose task code it reproduces."""
MODES = tuple(RELEASES)
REASONING_TAGS = (("<think>", "</think>"), ("<analysis>", "</analysis>"))
"""The default of lmms-eval's `--reasoning_tags` (0.7.0 on)."""
LEGACY_PREFIXES = ("The best answer is", "The correct answer is", "The answer is", "The answer",
                   "The best option isThe correct option is",  # two literals without a comma between
                   "Best answer:Best option:")  # likewise: these two entries never match real replies


def is_lmms(compat: str) -> bool:
    """Whether `compat` is one of the lmms-eval modes (current or an older release)."""
    return compat in RELEASES


def check_compat(compat: str, allowed: tuple[str, ...], benchmark: str) -> None:
    """A one-line LvuError for a compat value `benchmark` does not know; an `lmms-eval@X` value
    names the modes and the releases each reproduces."""
    if compat in allowed:
        return
    if str(compat).startswith(LMMS_EVAL):
        modes = "; ".join(f"{m} = lmms-eval {RELEASES[m]}" for m in allowed if m in RELEASES)
        raise LvuError(f"compat={compat!r} is unknown for {benchmark} — its lmms-eval modes: {modes}")
    if str(compat).startswith(VLMEVALKIT) and any(m in COMMITS for m in allowed):
        modes = "; ".join(f"{m} = VLMEvalKit @{COMMITS[m]}" for m in allowed if m in COMMITS)
        raise LvuError(f"compat={compat!r} is unknown for {benchmark} — its VLMEvalKit modes: {modes}")
    raise LvuError(f"compat={compat!r} is unknown for {benchmark} — use one of {', '.join(allowed)}")


def strip_reasoning_tags(text: str, compat: str = LMMS_EVAL) -> str:
    """The reply as lmms-eval's tasks see it: `lmms_eval/api/reasoning.py::strip_reasoning_tags`
    with the CLI's default tags (0.7.0 on; 0.6 passes the reply unchanged). Each <tag>..</tag>
    block is cut; a lone closing tag keeps what follows its last occurrence; then strip()."""
    if compat == LMMS_EVAL_0_6:
        return text
    result = text
    for start_tag, end_tag in REASONING_TAGS:
        while start_tag in result and end_tag in result:
            start = result.find(start_tag)
            end = result.find(end_tag, start)
            if start == -1 or end == -1:
                break
            result = result[:start] + result[end + len(end_tag):]
        if end_tag in result and start_tag not in result:
            result = result.rsplit(end_tag, 1)[-1]
    return result.strip()


def first_letter_after_prefixes(s: str, prefixes: tuple[str, ...]) -> str:
    """Video-MME's scorer shape (`extract_characters_regex`): strip, delete the prefixes by
    str.replace in order, "" when > 10 words and no [ABCD], else the first capital A-D anywhere."""
    s = s.strip()
    for answer_prefix in prefixes:
        s = s.replace(answer_prefix, "")
    if len(s.split()) > 10 and not re.search("[ABCD]", s):
        return ""
    matches = re.search(r"[ABCD]", s)
    if matches is None:
        return ""
    return matches[0]


def extract_legacy(s: str) -> str:
    """lmms-eval <= 0.7.1 `extract_characters_regex` (Video-MME and LVBench tasks): a letter A-D or ""."""
    return first_letter_after_prefixes(s, LEGACY_PREFIXES)


def task_reply(response: Response, compat: str = LMMS_EVAL) -> str:
    """The reply as lmms-eval's tasks see it: a logged `filtered_resps` as it is (its evaluator already
    stripped it: stripping again is not idempotent — `B</th<analysis>x</analysis>ink>A` is `B</think>A`
    once and `A` twice), else the model's text through `strip_reasoning_tags`."""
    text = response.text or ""
    if response.logged is not None and response.logged.filtered:
        return text
    return strip_reasoning_tags(text, compat)
