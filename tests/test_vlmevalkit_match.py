"""VLMEvalKit's can_infer, build_choices and build_option_str (lvu.scoring.vlmevalkit_match) at the two
commits lvu pins: e8e78f05 (the default `vlmevalkit`) and 296425e2 (`vlmevalkit@296425e2`).

How the expected letters were obtained: vlmeval/utils/matching_util.py was copied unchanged from
github.com/open-compass/VLMEvalKit at each commit (`git show <commit>:vlmeval/utils/matching_util.py`)
into a scratch package whose `vlmeval.smp` only provides `get_logger`, and its `can_infer(reply, choices)`
was run on every row below (choices = {"A": option 1, "B": option 2, ...}; the VERBOSE environment
variable set to "1" for the rows marked verbose, unset otherwise), Python 3 with pandas 3.1.1;
VLMEvalKit's `False` is written None. build_option_str (vlmeval/smp/vlm.py) was run the same way.
The issue #32 replies are the first five rows. The port lvu had before (VLMEvalKit @18fc37a, since
folded into this module) agreed with the 296425e2 column on every row and differed from the
e8e78f05 column on ten (B, None, None, C, D for the issue's five replies).
"""

from __future__ import annotations

import math

import pytest

from lvu.scoring.vlmevalkit_match import (C296425E2, E8E78F05, build_choices, build_option_str, can_infer,
                                          can_infer_option, can_infer_text)

OPTIONS = {
    "plot": ["The man walks away from the red car", "The man gets into the red car",
             "The woman drives the car away", "The dog chases the man"],
    "count": ["3", "5", "7", "2"],
    "five": ["apple", "banana", "cherry", "grape", "lemon"],
}

# (reply, options, VERBOSE set, can_infer @e8e78f05, can_infer @296425e2) — VLMEvalKit's own outputs.
TABLE = [
    ("B is correct because the man walks away from the red car in the end", "plot", False, "A", "B"),
    ("Answer is B, not C.", "plot", False, "B", None),
    ("Answer is B, not C.", "count", False, "B", None),
    ("Answer is 7", "count", False, None, "C"),
    ("The correct answer is: 2", "count", False, None, "D"),
    ("7", "count", False, "C", "C"),
    ("There are 7 of them.", "count", False, None, "C"),
    ("The man gets into the red car", "plot", False, "B", "B"),
    ("I think the man gets into the red car, as the video shows near the end of the clip where he opens "
     "the door.", "plot", False, "B", "B"),
    ("Cannot determine the answer from the video.", "plot", False, "Z", "Z"),
    ("Sorry, I can't help with images of people yet.", "count", False, "Z", "Z"),
    ("Failed to obtain answer via API.", "plot", False, None, None),
    ("Failed to obtain answer via API.", "five", False, None, None),
    ("A or B", "plot", False, None, None),
    ("(A) and (C)", "plot", False, None, None),
    ("(B)", "plot", False, "B", "B"),
    ("B.", "count", False, "B", "B"),
    ("**B**", "plot", False, "B", "B"),
    ("[C]", "count", False, "C", "C"),
    ("{D}", "plot", False, "D", "D"),
    ("Option B!", "plot", False, "B", "B"),
    ("Best option: (C) The woman drives the car away", "plot", False, "C", "C"),
    ("Z", "plot", False, "Z", "Z"),
    ("The answer is Z", "plot", False, "Z", "Z"),
    ("b", "plot", False, None, None),
    ("The answer is b", "plot", False, "B", None),
    ("The answer is definitely the dog", "plot", False, "D", None),
    ("The correct answer is **C**.", "plot", False, "C", "C"),
    ("B B B B B B", "count", False, None, "B"),
    ("B, because the man is seen at the start walking off", "plot", False, None, "B"),
    ("The answer is E, not A", "five", False, None, None),
    ("The answer is E.", "five", False, "E", "E"),
    ("banana", "five", False, "B", "B"),
    ("A man walks away", "plot", False, "A", "A"),
    ("A man walks away", "plot", True, None, None),
    ("nan", "count", False, None, None),
    ("", "plot", False, None, None),
    ("N/A", "count", False, None, None),
]


@pytest.mark.parametrize("commit", [E8E78F05, C296425E2])
@pytest.mark.parametrize(("reply", "options", "verbose", "e8", "c29"), TABLE)
def test_can_infer_as_vlmevalkit(reply: str, options: str, verbose: bool, e8: str | None, c29: str | None,
                                 commit: str) -> None:
    expected = e8 if commit == E8E78F05 else c29
    assert can_infer(reply, build_choices(OPTIONS[options]), commit=commit, verbose=verbose) == expected


def test_issue_replies_follow_e8e78f05() -> None:
    """Issue #32 item 6, each rule on its own (the letters checked against VLMEvalKit's functions as above)."""
    plot = build_choices(OPTIONS["plot"])
    count = build_choices(OPTIONS["count"])
    reply = "B is correct because the man walks away from the red car in the end"
    # a lone letter counts only among the last four words …
    assert can_infer_option(reply, plot, commit=E8E78F05) is None
    assert can_infer_option(reply, plot, commit=C296425E2) == "B"
    # … and its first occurrence is the one that must be there
    assert can_infer_option("B is it, I say: B", plot) is None
    assert can_infer_option("I say it is B", plot) == "B"
    # the "answer is X" rule
    assert can_infer_option("Answer is B, not C.", plot, commit=E8E78F05) == "B"
    assert can_infer_option("Answer is B, not C.", plot, commit=C296425E2) is None
    # option text refused when the reply is longer than twice the options' total length (2 * 4 = 8 here)
    assert can_infer_text("Answer is 7", count, commit=E8E78F05) is None
    assert can_infer_text("Answer is 7", count, commit=C296425E2) == "C"
    assert can_infer_text("it is 7 !", count, commit=E8E78F05) is None  # 9 characters
    assert can_infer_text("it is 7 ", count, commit=E8E78F05) == "C"  # 8 characters


def test_nan_reads_as_text_nan() -> None:
    """A reply pandas reads back as NaN reaches can_infer as str(nan) == 'nan' (lvu: None)."""
    choices = build_choices(["nan", "one", "two", "three"])
    assert can_infer(None, choices) == can_infer("nan", choices) == "A"


def test_unknown_commit() -> None:
    with pytest.raises(ValueError, match="296425e2"):
        can_infer("B", build_choices(OPTIONS["count"]), commit="18fc37a")


def test_build_option_str_as_vlmevalkit() -> None:
    """build_option_str(build_choices(row)) from VLMEvalKit (both commits print the same text);
    options None/NaN are left out as pandas.isna leaves them out."""
    choices = build_choices(["3", 5, None, "two words", math.nan])
    assert choices == {"A": "3", "B": 5, "D": "two words"}
    assert build_option_str(choices) == "There are several options: \nA. 3\nB. 5\nD. two words\n"
