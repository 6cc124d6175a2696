"""Issue 22: a malformed cue is a one-line error naming the file and the line, never a silently
dropped cue (WebVTT), an accepted NaN / infinite / negative time (LongVideoBench JSON) or an
OverflowError naming nothing (a 400-digit SRT hour)."""

from __future__ import annotations

import json

import pytest

from lvu.errors import SubtitleError
from lvu.media.subtitles import load_cues

GOOD_VTT_CUE = "00:00:01.000 --> 00:00:02.000\nHello\n\n"


@pytest.mark.parametrize("name,text,where", [
    ("comma.vtt", "WEBVTT\n\n00:00:01,000 --> 00:00:02,000\nHello\n", "line 3: bad cue timing '00:00:01,000 --> 00:00:02,000'"),
    ("arrow.vtt", "WEBVTT\n\n" + GOOD_VTT_CUE + "00:00:03.000 -> 00:00:04.000\nLost\n", "line 6: bad cue timing"),
    ("huge.vtt", "WEBVTT\n\n" + "9" * 400 + ":00:01.000 --> 00:00:02.000\nHi\n", "line 3: bad cue timing '999"),
    ("huge.srt", "1\n" + "9" * 400 + ":00:01,000 --> 00:00:02,000\nHi\n", "line 2: time out of range '999"),
    ("nan.json", '[\n {"timestamp": [0.5, 1.0], "text": "a"},\n {"timestamp": [NaN, 2.0], "text": "b"}\n]',
     "cue 2 at line 3: time nan is not seconds >= 0"),
    ("inf.json", '[{"timestamp": [1.0, Infinity], "text": "a"}]', "cue 1 at line 1: time inf is not seconds >= 0"),
    ("negative.json", json.dumps([{"start": -5, "end": 2, "line": "c"}]), "cue 1 at line 1: time -5.0 is not seconds"),
    ("text-nan.json", json.dumps([{"start": "nan", "end": "00:00:01.000", "line": "c"}]), "cue 1 at line 1: time nan"),
])
def test_a_malformed_cue_is_one_line_naming_file_and_line(tmp_path, name, text, where):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SubtitleError) as error:
        load_cues(path)
    message = str(error.value)
    assert message.startswith(f"{path}: not a valid ") and f"({where}" in message and "\n" not in message


def test_webvtt_timings_webvtt_py_reads_still_load(tmp_path):
    path = tmp_path / "lenient.vtt"
    path.write_text("WEBVTT\n\nNOTE a comment\n\n1\n0:00:03.5 --> 0:00:04.25 align:start\nok\n\n"
                    "00:05.000-->00:06.000\nshort form\n", encoding="utf-8")
    assert [(c.start, c.end, c.text) for c in load_cues(path)] == [(3.5, 4.25, "ok"), (5.0, 6.0, "short form")]
