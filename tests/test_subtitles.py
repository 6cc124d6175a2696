"""Subtitle loading, Video-MME covering selection and LongVideoBench interleaving.

Expected values are worked out by hand in the comments next to them.
"""

from __future__ import annotations

import json
import random

import pytest

from lvu.errors import SubtitleError
from lvu.media.subtitles import clean_text, cues_text, interleave, load_cues, select_cues
from lvu.types import Frame, Subtitle

FONT = '<font color="white" size=".72c">'  # Video-MME's SRT wrapper


def spans(cues):
    return [(c.text, c.start, c.end) for c in cues]


def cue(text, start, end):
    return Subtitle(text=text, start=start, end=end)


def frames_at(*times):
    return [Frame(timestamp=t) for t in times]


def order(parts):
    """'F1.0' for a frame, the text for a cue: a readable picture of the interleaving."""
    return [f"F{p.timestamp}" if isinstance(p, Frame) else p.text for p in parts]


# ---- loading --------------------------------------------------------------------------------


def test_srt_font_markup_multiline_and_empty_cue(tmp_path):
    srt = (
        f"1\n00:00:01,000 --> 00:00:02,500\n{FONT}Hello\nworld</font>\n\n"
        "2\n00:00:03,000 --> 00:00:04,000\n{\\an8}<i>Second</i>   line\n\n"
        f"3\n00:00:05,000 --> 00:00:06,000\n{FONT} </font>\n\n"  # only markup: dropped
        "4\n00:01:00,250 --> 00:01:01,000\nTom &amp; Jerry\\Nagain\n"
    )
    path = tmp_path / "v.srt"
    path.write_text(srt, encoding="utf-8")
    assert spans(load_cues(path)) == [
        ("Hello world", 1.0, 2.5),  # two lines joined by one space, <font> gone
        ("Second line", 3.0, 4.0),  # {\an8} and <i> gone, runs of spaces collapsed
        ("Tom & Jerry again", 60.25, 61.0),  # entity decoded, ASS \N break -> space
    ]


def test_srt_crlf_and_unsorted_cues_come_back_sorted(tmp_path):
    path = tmp_path / "v.srt"
    path.write_bytes(
        b"1\r\n00:00:09,000 --> 00:00:10,000\r\nlate\r\n\r\n"
        b"2\r\n00:00:01,000 --> 00:00:02,000\r\nearly\r\n"
    )
    assert spans(load_cues(path)) == [("early", 1.0, 2.0), ("late", 9.0, 10.0)]


def test_vtt_keeps_fractional_seconds(tmp_path):
    vtt = (
        "WEBVTT\n\n"
        "00:00:03.500 --> 00:00:05.250 align:start\n<v Bob>Tom &amp; <c.yellow>Jerry</c></v>\n\n"
        "NOTE not a cue\n\n"
        "intro\n00:01.000 --> 00:02.000\nfirst\n"  # MM:SS.mmm form, with a cue id
    )
    path = tmp_path / "v.vtt"
    path.write_text(vtt, encoding="utf-8")
    # webvtt-py's start_in_seconds would say 3 for 00:00:03.500; we must keep 3.5.
    assert spans(load_cues(path)) == [("first", 1.0, 2.0), ("Tom & Jerry", 3.5, 5.25)]


def test_lvb_whisper_json_with_offset_and_null_end(tmp_path):
    path = tmp_path / "clip_en.json"
    path.write_text(
        json.dumps(
            [
                {"timestamp": [100.0, 102.5], "text": " Hello there"},
                {"timestamp": [102.5, 104.0], "text": "  "},  # empty after cleaning
                {"timestamp": [105.0, None], "text": " bye"},
            ]
        )
    )
    # offset 100: 100.0 -> 0.0, 102.5 -> 2.5. Null end -> duration (30) as the official loader
    # does, then rebased like every time: 30 - 100 = -70 (the official quirk, kept).
    assert spans(load_cues(path, offset=100.0, duration=30.0)) == [
        ("Hello there", 0.0, 2.5),
        ("bye", 5.0, -70.0),
    ]
    # Without a duration the open cue ends where it starts.
    assert spans(load_cues(path, offset=100.0))[-1] == ("bye", 5.0, 5.0)


def test_lvb_line_json_with_string_times(tmp_path):
    path = tmp_path / "v_en.json"
    path.write_text(
        json.dumps(
            [
                {"start": "00:01:05.250", "end": "00:01:07.000", "line": "a line"},
                {"start": "0:00:59.5", "end": "0:01:00", "line": "earlier"},
            ]
        )
    )
    # 65.25 - 60 = 5.25, 67 - 60 = 7; 59.5 - 60 = -0.5, 60 - 60 = 0 (kept: selection decides)
    assert spans(load_cues(path, offset=60)) == [("earlier", -0.5, 0.0), ("a line", 5.25, 7.0)]


def test_utf8_bom_latin1_and_utf16(tmp_path):
    body = "1\n00:00:01,000 --> 00:00:02,000\ncafé\n"
    bom = tmp_path / "bom.srt"
    bom.write_bytes(body.encode("utf-8-sig"))  # a BOM before the cue number breaks naive parsers
    latin = tmp_path / "latin.srt"
    latin.write_bytes(body.encode("latin-1"))  # b"caf\xe9" is not valid UTF-8
    utf16 = tmp_path / "utf16.srt"
    utf16.write_bytes(body.encode("utf-16"))
    for path in (bom, latin, utf16):
        assert spans(load_cues(path)) == [("café", 1.0, 2.0)], path.name
    # pysrt and webvtt-py skip a BOM themselves; json.loads and content sniffing do not.
    bom_json = tmp_path / "bom.json"
    bom_json.write_bytes('[{"timestamp": [1.0, 2.0], "text": "café"}]'.encode("utf-8-sig"))
    bom_sniffed = tmp_path / "bom.txt"
    bom_sniffed.write_bytes("WEBVTT\n\n00:00:01.000 --> 00:00:02.000\ncafé\n".encode("utf-8-sig"))
    for path in (bom_json, bom_sniffed):
        assert spans(load_cues(path)) == [("café", 1.0, 2.0)], path.name


def test_format_sniffed_when_extension_unknown(tmp_path):
    srt = tmp_path / "a.txt"
    srt.write_text("1\n00:00:01,000 --> 00:00:02,000\nsrt text\n")
    vtt = tmp_path / "b.sub"
    vtt.write_text("WEBVTT\n\n00:00:01.500 --> 00:00:02.000\nvtt text\n")
    lvb = tmp_path / "c"
    lvb.write_text('[{"timestamp": [1.0, 2.0], "text": "json text"}]')
    assert spans(load_cues(srt)) == [("srt text", 1.0, 2.0)]
    assert spans(load_cues(vtt)) == [("vtt text", 1.5, 2.0)]
    assert spans(load_cues(lvb)) == [("json text", 1.0, 2.0)]


def test_blank_file_has_no_cues(tmp_path):
    path = tmp_path / "empty.srt"
    path.write_text("\n  \n")
    assert load_cues(path) == []


@pytest.mark.parametrize(
    "name, content",
    [
        ("bad.srt", "1\nnot a time line\nhello\n"),
        ("bad.vtt", "this is no webvtt file\n"),
        ("bad.json", '[{"timestamp": [1.0, 2.0], "text": "ok"}, {"foo": 1}]'),
        ("bad2.json", '[{"start": "aa:bb", "end": "00:00:02", "line": "x"}]'),
        ("trunc.json", '[{"timestamp": [1.0, 2.0], "te'),
        ("notes.txt", "just some words\nwith no cues\n"),
    ],
)
def test_broken_file_raises_one_line_error_naming_it(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(SubtitleError) as info:
        load_cues(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and " — " in message
    assert "\n" not in message


def test_missing_file_raises_subtitle_error(tmp_path):
    path = tmp_path / "nope.srt"
    with pytest.raises(SubtitleError, match="nope.srt: file not found — "):
        load_cues(path)


def test_clean_text_keeps_a_lone_less_than():
    assert clean_text("<b>x</b> a < b and  c > d") == "x a < b and c > d"


# ---- selection --------------------------------------------------------------------------------


def test_select_none_and_all():
    cues = [cue("a", 0, 1), cue("b", 5, 6)]
    assert select_cues(cues, [0.5], "none") == []
    assert select_cues(cues, [], "all") == cues
    with pytest.raises(ValueError, match="unknown subtitle mode"):
        select_cues(cues, [0.5], "sometimes")


def test_covering_selection_dedupes_and_keeps_time_order():
    a, b, c, e = cue("A", 0, 2), cue("B", 2, 4), cue("C", 10, 12), cue("E", 5, 6)
    repeat_of_a = cue("A", 0, 2)  # the same entry twice in the file
    cues = [a, repeat_of_a, b, e, c]
    # Frames given out of order. 0.5 and 1.5 both hit A (once); 2.0 is A's end and B's start:
    # half-open [start, end) gives it to B only; 6.0 is E's end, so E is not covered; 11 hits C.
    times = [11.0, 0.5, 2.0, 1.5, 6.0]
    assert select_cues(cues, times, "covering") == [a, b, c]
    assert cues_text(select_cues(cues, times, "covering")) == "A\nB\nC"


def test_interleave_selection_official_covering_rule():
    frames = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # 1 fps
    p = cue("P", 0.2, 0.6)  # 0.4 s long -> widened to (-0.1, 0.9): frame 0 inside -> kept
    q = cue("Q", 3.0, 4.0)  # exactly 1 s, not widened; frames 3 and 4 sit on the ends -> dropped
    r = cue("R", 4.2, 4.4)  # widened to (3.8, 4.8): frame 4 inside -> kept
    s = cue("S", 1.5, 3.5)  # frames 2 and 3 strictly inside -> kept
    t = cue("T", 5.5, 9.0)  # after the last frame, no frame inside -> dropped
    twice = cue("S", 1.5, 3.5)  # repeated entry: the official loader inserts it twice
    assert select_cues([p, s, twice, q, r, t], frames, "interleave") == [p, s, twice, r]


# ---- interleaving -------------------------------------------------------------------------------


def test_interleave_places_cues_at_their_midpoints():
    frames = frames_at(0.0, 1.0, 2.0, 3.0)
    cues = [
        cue("before", -2.0, -0.5),  # mid -1.25: ahead of every frame
        cue("tie", 0.5, 1.5),  # mid 1.0 == frame 1.0: the frame goes first (official `<=`)
        cue("next", 1.0, 2.0),  # mid 1.5: after frame 1, before frame 2
        cue("after", 3.5, 5.0),  # mid 4.25: after the last frame
    ]
    assert order(interleave(frames, cues)) == [
        "before", "F0.0", "F1.0", "tie", "next", "F2.0", "F3.0", "after",
    ]


def test_interleave_never_moves_frames_backwards():
    frames = frames_at(0.0, 1.0, 2.0, 3.0)
    # mid 5 places every frame first; the later cue with mid 1.5 then follows in given order.
    assert order(interleave(frames, [cue("long", 0, 10), cue("short", 1, 2)])) == [
        "F0.0", "F1.0", "F2.0", "F3.0", "long", "short",
    ]
    assert order(interleave(frames, [])) == ["F0.0", "F1.0", "F2.0", "F3.0"]
    assert order(interleave([], [cue("x", 0, 1)])) == ["x"]


def _single_pass(frame_times, cues):
    """The official loop as the seed doc describes it (one pass: place frames <= mid, then emit
    the cue only if a frame lies strictly inside its span, widened to mid +- 0.5 when < 1 s)."""
    out, i = [], 0
    for c in cues:
        mid = (c.start + c.end) / 2
        while i < len(frame_times) and frame_times[i] <= mid:
            out.append(f"F{frame_times[i]}")
            i += 1
        lo, hi = (mid - 0.5, mid + 0.5) if c.end - c.start < 1 else (c.start, c.end)
        if any(lo < t < hi for t in frame_times):
            out.append(c.text)
    return out + [f"F{t}" for t in frame_times[i:]]


def test_select_then_interleave_matches_the_single_pass_on_sorted_cues():
    rng = random.Random(7)
    for trial in range(300):
        duration = rng.uniform(5, 60)
        n = rng.randint(1, 16)
        times = [round(k * duration / n, 2) for k in range(n)]
        cues = []
        for k in range(rng.randint(0, 25)):
            start = round(rng.uniform(-3, duration + 3), 1)
            length = rng.choice([0.2, 0.5, 1.0, 2.5, 8.0])
            cues.append(cue(f"c{k}", start, round(start + length, 1)))
        cues.sort(key=lambda c: c.start)  # load_cues' order
        chosen = select_cues(cues, times, "interleave")
        assert order(interleave(frames_at(*times), chosen)) == _single_pass(times, cues), trial
