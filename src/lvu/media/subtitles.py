"""Subtitle cues: load SRT / WebVTT / LongVideoBench JSON, pick the cues a prompt needs, interleave.

    cues = load_cues("v.srt")                             # clean text, seconds, sorted by start
    chosen = select_cues(cues, plan.timestamps, plan.subtitle_mode)
    parts = interleave(frames, chosen)                    # LongVideoBench order
    block = cues_text(chosen)                             # Video-MME text block body
    srt_text([(1.0, 2.5, "Hello")])                       # write cues back as SRT

Two official rules live here (both pinned by tests/test_subtitles.py):
- "covering" (Video-MME): a cue is kept when a sampled frame time t has start <= t < end, the
  half-open frame-span test of lmms-eval's `extract_subtitles` (the paper only says "the subtitles
  corresponding to the sampled frames"); kept once, in time order (lmms-eval's set() loses order).
- "interleave" (LongVideoBench `insert_subtitles_into_frames`): a cue is kept when a sampled frame
  lies *strictly* inside (start, end), widened to mid +- 0.5 s when the cue is shorter than 1 s;
  it is placed after every frame with timestamp <= its mid-point (start + end) / 2.
"""

from __future__ import annotations

import bisect
import html
import json
import math
import re
from pathlib import Path

import pysrt
import webvtt

from lvu.errors import SubtitleError
from lvu.types import Frame, Subtitle

MODES = ("none", "all", "covering", "interleave")
_EXTENSIONS = {".srt": "srt", ".vtt": "vtt", ".webvtt": "vtt", ".json": "json"}

# `<font ...>`, `<i>`, WebVTT `<v Bob>` / `<c.yellow>` / `<00:01.000>`; a lone "a < b" is kept.
_TAG = re.compile(r"<(?=[/A-Za-z0-9])[^<>]*>")
_ASS = re.compile(r"\{\\[^}]*\}")  # ASS override blocks such as {\an8}, common in fan SRTs


def clean_text(raw: str) -> str:
    """Cue text without markup, entities decoded, all whitespace (line breaks too) collapsed."""
    text = _TAG.sub("", _ASS.sub("", raw.replace("\\N", " ")))
    return " ".join(html.unescape(text).split())


# ---- loading ----------------------------------------------------------------------------------


def load_cues(
    path: str | Path, *, offset: float = 0.0, duration: float | None = None
) -> list[Subtitle]:
    """Read a subtitle file into clean cues in video time, sorted by start.

    The format comes from the extension (.srt, .vtt, .json), else from the content. `offset` is
    subtracted from every time (LongVideoBench's starting_timestamp_for_subtitles). `duration`
    only matters for LongVideoBench JSON cues with a null end (see `_json_cues`). Cues whose text
    is empty after cleaning are dropped. Raises SubtitleError (one line) for a missing or
    unparseable file.
    """
    path = Path(path)
    text = _read_text(path)
    if not text.strip():
        return []
    fmt = _EXTENSIONS.get(path.suffix.lower()) or _sniff(path, text)
    raw = {"srt": _srt_cues, "vtt": _vtt_cues, "json": _json_cues}[fmt](path, text, duration)
    cues = [
        Subtitle(text=clean, start=start - offset, end=end - offset)
        for start, end, body in raw
        if (clean := clean_text(body))
    ]
    return sorted(cues, key=lambda c: c.start)  # stable: equal starts keep file order


def srt_text(cues: list[tuple[float, float, str]]) -> str:
    """(start, end, text) cues in seconds as an SRT file's text (times rounded to milliseconds)."""
    def ts(t: float) -> str:
        ms = round(t * 1000)
        return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"

    return "".join(f"{i}\n{ts(a)} --> {ts(b)}\n{text}\n\n" for i, (a, b, text) in enumerate(cues, start=1))


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        fix = "check the subtitle path or run without subtitles"
        raise SubtitleError(f"{path}: file not found — {fix}") from None
    except OSError as e:
        fix = "check that it is a readable file"
        raise SubtitleError(f"{path}: cannot read ({e.strerror}) — {fix}") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 with BOM (Windows subtitle tools)
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")  # tolerates a UTF-8 BOM
    except UnicodeDecodeError:
        return data.decode("latin-1")  # old SRTs are often cp1252/latin-1; never fails


def _sniff(path: Path, text: str) -> str:
    head = text.lstrip()
    if head.startswith("WEBVTT"):
        return "vtt"
    if head[:1] in "[{":
        return "json"
    if "-->" in head:
        return "srt"
    raise SubtitleError(
        f"{path}: unknown subtitle format — use an SRT, WebVTT or LongVideoBench JSON file "
        "(.srt, .vtt or .json)"
    )


def _broken(path: Path, kind: str, detail: str) -> SubtitleError:
    detail = " ".join(detail.split())[:80]  # one line, bounded
    fix = "fix or re-export the file, or run without subtitles"
    return SubtitleError(f"{path}: not a valid {kind} file ({detail}) — {fix}")


_HUGE_NUMBER = re.compile(r"\d{10,}")  # no time field has ten digits: 10^9 hours is no video
# A WebVTT cue timing line, "[hh:]mm:ss.ttt --> [hh:]mm:ss.ttt[ settings]", as leniently as
# webvtt-py reads it (its non-strict pattern): every file it read before still reads.
_VTT_TIME = r"(?:\d+:)?\d{1,2}:\d{1,2}\.\d{1,3}"
_VTT_TIMING = re.compile(rf"\s*{_VTT_TIME}\s*-->\s*{_VTT_TIME}(?:\s.*)?")
_LOOKS_LIKE_TIMING = re.compile(r"\s*\d[\d:.,]*\s*-+>|.*-->")  # what a writer meant as a timing line


def _bad_line(text: str, bad) -> tuple[int, str] | None:
    """(1-based number, text) of the first line for which `bad(line)` holds."""
    return next(((n, line) for n, line in enumerate(text.splitlines(), 1) if bad(line)), None)


def _srt_cues(path: Path, text: str, _duration: float | None) -> list[tuple[float, float, str]]:
    if found := _bad_line(text, lambda line: "-->" in line and _HUGE_NUMBER.search(line)):
        raise _broken(path, "SRT", f"line {found[0]}: time out of range {found[1].strip()[:30]!r}")
    try:
        items = pysrt.from_string(text, error_handling=pysrt.ERROR_RAISE)
    except pysrt.Error as e:  # raise, not skip: a silently lost cue would change the prompt
        detail = f"line {e.args[0]}: {e.args[1]!r}" if len(e.args) == 2 else str(e)
        raise _broken(path, "SRT", detail) from None
    return [(c.start.ordinal / 1000, c.end.ordinal / 1000, c.text) for c in items]


def _vtt_cues(path: Path, text: str, _duration: float | None) -> list[tuple[float, float, str]]:
    # webvtt-py drops a cue whose timing line it cannot read without a word: check them first.
    bad = _bad_line(text, lambda line: bool(_LOOKS_LIKE_TIMING.match(line))
                    and (not _VTT_TIMING.fullmatch(line) or bool(_HUGE_NUMBER.search(line))))
    if bad:
        raise _broken(path, "WebVTT", f"line {bad[0]}: bad cue timing {bad[1].strip()[:45]!r}")
    try:
        captions = webvtt.from_string(text).captions
    except Exception as e:  # webvtt raises MalformedFileError and friends
        raise _broken(path, "WebVTT", str(e) or type(e).__name__) from None
    # caption.start_in_seconds is a truncated int (3.5 -> 3): parse the "HH:MM:SS.mmm" string.
    return [(_seconds(c.start), _seconds(c.end), c.raw_text) for c in captions]


def _json_cues(path: Path, text: str, duration: float | None) -> list[tuple[float, float, str]]:
    """LongVideoBench's two item shapes (both handled by the official loader):
    Whisper-style {"timestamp": [start, end], "text"} and {"start": "HH:MM:SS.mmm", "end", "line"}.

    A null end (Whisper's last segment) becomes `duration`, as the official loader does, and is
    then rebased by the offset like every other time. Without `duration` the cue ends at its start.
    """
    try:
        items = json.loads(text)
        if isinstance(items, dict):  # raw Whisper output wraps the list in "segments"
            items = items["segments"]
        if not isinstance(items, list):
            raise TypeError("expected a list of cues")
        out = []
        for i, item in enumerate(items):
            if "timestamp" in item:
                start, end = item["timestamp"]
            else:
                start, end = item["start"], item["end"]
            body = item["text"] if "text" in item else item["line"]
            start = _seconds(start)
            if end is None:
                end = duration if duration is not None else start
            end = _seconds(end)
            if bad := next((t for t in (start, end) if not 0 <= t < math.inf), None):  # NaN fails both
                line = _item_lines(text)
                where = f"cue {i + 1}" + (f" at line {line[i]}" if i < len(line) else "")
                raise ValueError(f"{where}: time {bad!r} is not seconds >= 0")
            out.append((start, end, str(body or "")))
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as e:
        detail = f"missing key {e}" if isinstance(e, KeyError) else str(e)
        raise _broken(path, "LongVideoBench JSON subtitle", detail) from None
    return out


def _item_lines(text: str) -> list[int]:
    """The line each item of a top-level JSON list starts on (as far as it reads; [] for another
    shape), to name a bad cue's line."""
    decoder = json.JSONDecoder()
    lines: list[int] = []
    i = len(text) - len(text.lstrip())
    if text[i:i + 1] != "[":
        return lines
    i, line, counted = i + 1, 1, 0
    try:
        while True:
            i += len(text[i:]) - len(text[i:].lstrip())
            if text[i:i + 1] in ("]", ""):
                return lines
            line, counted = line + text.count("\n", counted, i), i
            lines.append(line)
            _, i = decoder.raw_decode(text, i)
            i += len(text[i:]) - len(text[i:].lstrip())
            i += text[i:i + 1] == ","
    except ValueError:
        return lines


def _seconds(value: object) -> float:
    """Seconds from a number or "[[HH:]MM:]SS[.,]fff"; ValueError otherwise."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"bad time {value!r}")
    parts = value.strip().replace(",", ".").split(":")
    if len(parts) > 3:
        raise ValueError(f"bad time {value!r}")
    total = 0.0
    for part in parts[:-1]:
        total = total * 60 + int(part)
    return total * 60 + float(parts[-1])


# ---- selection and placement -------------------------------------------------------------------


def select_cues(cues: list[Subtitle], frame_times: list[float], mode: str) -> list[Subtitle]:
    """The cues a prompt uses, in the order given (load_cues' time order).

    none: no cues. all: every cue (Video-MME's Gemini "full subtitle" mode, LongVideoBench's
    subtitles-only mode). covering: Video-MME's cues of the sampled frames. interleave:
    LongVideoBench's cues worth interleaving. The rules are in the module docstring.
    """
    if mode not in MODES:
        raise ValueError(f"unknown subtitle mode {mode!r}; expected one of {', '.join(MODES)}")
    if mode == "none":
        return []
    if mode == "all":
        return list(cues)
    times = sorted(frame_times)
    if mode == "interleave":  # the official loader keeps repeated entries, so do we
        return [c for c in cues if _covers_strict_widened(c, times)]
    chosen, seen = [], set()
    for cue in cues:  # each cue once however many frames it covers; repeated entries once too
        key = (cue.text, cue.start, cue.end)
        if key not in seen and _covers_half_open(cue, times):
            seen.add(key)
            chosen.append(cue)
    return chosen


def _first_at_or_after(times: list[float], t: float, strict: bool) -> float | None:
    i = (bisect.bisect_right if strict else bisect.bisect_left)(times, t)
    return times[i] if i < len(times) else None


def _covers_half_open(cue: Subtitle, times: list[float]) -> bool:
    # lmms-eval: start_frame <= f < end_frame, so a frame on a boundary between two cues picks one.
    t = _first_at_or_after(times, cue.start, strict=False)
    return t is not None and t < cue.end


def _covers_strict_widened(cue: Subtitle, times: list[float]) -> bool:
    # Official LongVideoBench: widen cues shorter than 1 s to mid +- 0.5, then start < t < end.
    start, end = cue.start, cue.end
    if end - start < 1:
        mid = (start + end) / 2
        start, end = mid - 0.5, mid + 0.5
    t = _first_at_or_after(times, start, strict=True)
    return t is not None and t < end


def interleave(frames: list[Frame], cues: list[Subtitle]) -> list[Frame | Subtitle]:
    """Frames and cues in one list, LongVideoBench style.

    Walking the cues in order, every not-yet-placed frame with timestamp <= the cue's mid-point
    goes first (a frame exactly at the mid-point precedes the cue), then the cue; leftover frames
    come last. So a cue before the first frame leads the list, one after the last frame ends it,
    and frames never move backwards (out-of-order cues keep their given order).

    Placement only: for LongVideoBench pass `select_cues(cues, times, "interleave")`. Filtering
    first gives the same list as the official single pass for start-sorted cues, because a dropped
    cue can never hold back a frame that a later kept cue would have placed differently.
    """
    out: list[Frame | Subtitle] = []
    i = 0
    for cue in cues:
        mid = (cue.start + cue.end) / 2
        while i < len(frames) and frames[i].timestamp <= mid:
            out.append(frames[i])
            i += 1
        out.append(cue)
    out.extend(frames[i:])
    return out


def cues_text(cues: list[Subtitle]) -> str:
    """Cue texts, one per line, for text-only subtitle blocks."""
    return "\n".join(c.text for c in cues)
