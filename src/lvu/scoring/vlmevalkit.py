"""What the `compat=vlmevalkit` modes share: the VLMEvalKit commits each mode reproduces, its API
failure message, and how its `evaluate()` sees a reply after the prediction sheet round trip.

VLMEvalKit has no PyPI release, so each mode names a commit of github.com/open-compass/VLMEvalKit:
- "vlmevalkit" (the default) = "vlmevalkit@e8e78f05" (2026-08-18);
- "vlmevalkit@296425e2" (2024-12-09), the commit lvu followed for MLVU before compat round 3.
A benchmark offers the pins whose code it reproduces (its harness table); the tests pin each
behaviour with the replies, sheets and numbers VLMEvalKit's own code produced at that commit.

The sheet round trip: VLMEvalKit's inference writes the predictions to `<model>_<dataset>.xlsx`
(or .tsv) and `evaluate()` reads that file back with pandas' `load`, whose default `na_values`
turn a whole-cell `N/A`, `NA`, `None`, `null`, `NaN`, "" (and the rest of `NA_VALUES`) into NaN:
such a reply reaches the dataset's scorer as NaN, not as text (`reread`).
"""

from __future__ import annotations

VLMEVALKIT = "vlmevalkit"
VLMEVALKIT_E8E78F05 = "vlmevalkit@e8e78f05"
VLMEVALKIT_296425E2 = "vlmevalkit@296425e2"
COMMITS = {VLMEVALKIT: "e8e78f05", VLMEVALKIT_E8E78F05: "e8e78f05", VLMEVALKIT_296425E2: "296425e2"}
"""compat value -> the VLMEvalKit commit whose code it reproduces (first 8 hex digits)."""
MODES = tuple(COMMITS)

FAIL_MSG = "Failed to obtain answer via API."
"""VLMEvalKit's FAIL_MSG: what its API wrappers return when the model call failed."""

NA_VALUES = frozenset({
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
})
"""pandas' default `na_values` (`pandas._libs.parsers.STR_NA_VALUES`, the same in 2.2.3 and 3.1.1):
a cell equal to one of these, as a whole, is read as NaN by read_csv and read_excel."""


def is_vlmevalkit(compat: str) -> bool:
    """Whether `compat` is one of the VLMEvalKit modes."""
    return compat in COMMITS


def commit_of(compat: str) -> str:
    """The VLMEvalKit commit a mode reproduces ("e8e78f05" for the default `vlmevalkit`)."""
    return COMMITS[compat]


def reread(text: str | None) -> str | None:
    """The reply as VLMEvalKit's `evaluate()` reads it back from its prediction sheet: None (NaN)
    when pandas' default `na_values` match the whole cell, else the text unchanged."""
    if text is None or text in NA_VALUES:
        return None
    return text


def is_api_failure(text: str | None) -> bool:
    """Whether the reply holds VLMEvalKit's API failure message (its scorers test `FAIL_MSG in pred`)."""
    return text is not None and FAIL_MSG in text


UNMATCHED = "vlmevalkit-unmatched"
"""`Prediction.method` of a VLMEvalKit reply its rules read no option from and its `evaluate()`
hands to its LLM judge when one works (MLVU_MCQ: check_ans, then can_infer, then the judge); with
`--judge` such a reply gets the harness's `choice_task`, without one it is wrong as under
VLMEvalKit's `exact_matching`."""
