"""Typed arguments: the one place where a model argument or a benchmark setting becomes a bool, a
whole number, a number or one of a few words, so `False`, `false`, `no` and `0` mean the same to
every backend, and a bad value is a one-line LvuError naming the key and what it accepts.

    as_bool("hf", "trust_remote_code", "False")       -> False
    as_int("random", "seed", "abc")                   -> LvuError "random: seed='abc' is not a whole number ..."
    as_float("lvbench", "fps", 0, above=0)            -> LvuError "lvbench: fps=0 must be more than 0"
    check_known("openai", {"modle": "x"}, {"model"})  -> LvuError "openai has no argument(s) modle (did you mean model?); known: model"

Values arrive as the CLI's `parse_kv` leaves them (JSON-parsed when they look like JSON, else the
text) or as YAML gives them, so each converter takes text as well as the typed value.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lvu.errors import LvuError

TRUE_WORDS = ("true", "yes", "1")
FALSE_WORDS = ("false", "no", "0")
BOOL_HELP = "use true or false (also yes/no, 1/0, any case)"


def _where(owner: str, name: str, value: Any) -> str:
    return f"{owner + ': ' if owner else ''}{name}={value!r}"


def as_bool(owner: str, name: str, value: Any) -> bool:
    """true/false, yes/no, 1/0 in any case (text, bool, or the ints 0 and 1)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    word = value.strip().lower() if isinstance(value, str) else None
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise LvuError(f"{_where(owner, name, value)} is not true/false — {BOOL_HELP}")


def _bounds(low: float | None, high: float | None, above: float | None) -> str:
    if above is not None:
        return f"more than {above:g}" + (f" and at most {high:g}" if high is not None else "")
    if low is not None and high is not None:
        return f"from {low:g} to {high:g}"
    if low is not None:
        return f"at least {low:g}"
    return f"at most {high:g}" if high is not None else ""


def _check_range(owner: str, name: str, value: Any, out: float, low: float | None, high: float | None,
                 above: float | None, hint: str) -> None:
    if (above is not None and not out > above) or (low is not None and out < low) or (high is not None and out > high):
        raise LvuError(f"{_where(owner, name, value)} must be {_bounds(low, high, above)}{hint}")


def as_int(owner: str, name: str, value: Any, low: int | None = None, high: int | None = None, *,
           hint: str = "") -> int:
    """A whole number (12, "12", 12.0), within [low, high] when given; `hint` ends the error."""
    hint = f" — {hint}" if hint else ""
    try:
        if isinstance(value, bool):
            raise ValueError
        number = float(value) if isinstance(value, str) and not value.strip().lstrip("+-").isdigit() else value
        out = int(number)
        if isinstance(number, float) and number != out:
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        span = _bounds(low, high, None)
        raise LvuError(f"{_where(owner, name, value)} is not a whole number"
                       + (f" ({span})" if span else "") + hint) from None
    _check_range(owner, name, value, out, low, high, None, hint)
    return out


def as_float(owner: str, name: str, value: Any, low: float | None = None, high: float | None = None, *,
             above: float | None = None, hint: str = "") -> float:
    """A finite number, within [low, high] (or strictly more than `above`) when given."""
    hint = f" — {hint}" if hint else ""
    try:
        if isinstance(value, bool):
            raise ValueError
        out = float(value)
        if not math.isfinite(out):
            raise ValueError
    except (TypeError, ValueError):
        span = _bounds(low, high, above)
        raise LvuError(f"{_where(owner, name, value)} is not a number" + (f" ({span})" if span else "") + hint) from None
    _check_range(owner, name, value, out, low, high, above, hint)
    return out


def as_choice(owner: str, name: str, value: Any, choices: Iterable[str]) -> str:
    """One of `choices`, exactly."""
    options = tuple(choices)
    if value not in options:
        raise LvuError(f"{_where(owner, name, value)} — use one of {', '.join(options)}")
    return value


def as_dict(owner: str, name: str, value: Any) -> dict:
    """A JSON object (already parsed by the CLI or YAML)."""
    if not isinstance(value, dict):
        raise LvuError(f"{_where(owner, name, value)} is not a JSON object — e.g. -a '{name}={{\"key\": 1}}'")
    return value


def as_cache(owner: str, name: str, value: Any) -> bool | Path:
    """A `cache` argument: a true/false word (or none/off), else a directory."""
    if value is None or value == "":
        return True
    if isinstance(value, str) and value.strip().lower() in ("none", "off"):
        return False
    if isinstance(value, (bool, int)) or (isinstance(value, str) and value.strip().lower() in TRUE_WORDS + FALSE_WORDS):
        return as_bool(owner, name, value)
    if not isinstance(value, (str, Path)) or not str(value).strip():
        raise LvuError(f"{_where(owner, name, value)} — {BOOL_HELP}, or a directory")
    return Path(str(value)).expanduser()


def check_known(owner: str, args: Iterable[str], known: Iterable[str]) -> None:
    """Refuse argument names `owner` does not have (a typo would otherwise be silently ignored)."""
    known = sorted(known)
    unknown = sorted(set(args) - set(known))
    if not unknown:
        return
    close = [m for u in unknown for m in difflib.get_close_matches(u, known, n=1)]
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise LvuError(f"{owner} has no argument(s) {', '.join(unknown)}{hint}; known: {', '.join(known)}")


def check_benchmark_settings(owner: str, settings: dict[str, Any], defaults: dict[str, Any] | None = None) -> None:
    """The settings every benchmark shares, checked before anything runs: `resize` and `limit` are
    whole numbers >= 1, `seed` a whole number. `frames` and `fps` are each benchmark's to check
    (0 = no frames in some; words such as Neptune's 1fps, Video-MME's fps:1; fps > 0). Text
    that reads as a whole number (a YAML "448", or 448.0) becomes the int; an int is left as
    given, so run ids stay."""

    def check(name: str, convert: Any, **bounds: Any) -> None:
        value = settings.get(name)
        if value is None:
            return
        out = convert(owner, name, value, **bounds)
        if type(out) is not type(value):  # "448" or 448.0 -> 448
            settings[name] = out

    for name, default in (defaults or {}).items():  # a switch (default True/False) reads "False" as False
        if isinstance(default, bool) and settings.get(name) is not None:
            settings[name] = as_bool(owner, name, settings[name])
    check("resize", as_int, low=1, hint="the shorter side of frames in pixels; leave resize out for full size")
    check("limit", as_int, low=1, hint="the first K samples; leave limit out to run them all")
    check("seed", as_int)
    frames = settings.get("frames")
    if isinstance(frames, str) and frames.strip().isdigit():
        settings["frames"] = int(frames)  # each benchmark then checks the count against its protocol


def check_tags(tags: list[str]) -> list[str]:
    """Run tags as given (repeats dropped), refusing empty ones and ones with commas or spaces (they
    would not filter cleanly). The store checks every tag it adds, so a Python caller gets this too."""
    for tag in tags:
        if not isinstance(tag, str) or not tag or any(c in tag for c in ", \t\n"):
            raise LvuError(f"tag {tag!r}: must be non-empty, without spaces or commas — e.g. --tag paper-v2")
    return list(dict.fromkeys(tags))
