"""Reading releases, the mechanism every benchmark shares: hub rows, release files read leniently,
records turned into Samples with per-record errors.

Each benchmark keeps its own record mapper and its own words for what is wrong and how to fix it;
these helpers give the errors one shape: one line naming the file, line, record or hub dataset.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from lvu.benchmarks.base import BadRecord
from lvu.errors import DataError, LvuError
from lvu.types import Sample


class RecordError(Exception):
    """'<what> — <fix>' for one release record; it becomes the BadRecord '<where>: <what> — <fix>'."""


class Unparsed(str):
    """A release line that is not JSON, in place of its record: why ('not valid JSON (...)')."""


# ---- the hub ---------------------------------------------------------------------------------------


def use_hub(data: Any, *, benchmark: str, holding: str) -> bool:
    """Whether `data` asks for the hub copy (absent, or `hf:...`). Absent while LVU_OFFLINE is set
    is an LvuError: '<benchmark> needs its release files: --data DIR holding <holding> ...'."""
    if data and not str(data).startswith("hf:"):
        return False
    if not data and os.environ.get("LVU_OFFLINE"):
        raise LvuError(f"{benchmark} needs its release files: --data DIR holding {holding} "
                       "(LVU_OFFLINE is set, so the hub copy is not used)")
    return True


def hf_home() -> Path:
    """$HF_HOME (default ~/.cache/huggingface): lmms-eval unpacks hub videos below it."""
    return Path(os.environ.get("HF_HOME", "~/.cache/huggingface")).expanduser()


def load_hub(repo: str, *args: Any, what: str, instead: str, shown: str, fix: str, rows: bool = True,
             error: type[LvuError] = LvuError, **kwargs: Any) -> Any:
    """`datasets.load_dataset(repo, *args, **kwargs)`: its rows as dicts, or (rows=False) what it
    returns. Without `datasets`: LvuError 'reading <what> from the hub needs `datasets`: pip install
    'lvu[hub]' (or <instead>)'. Any failure (network, auth, gating, unknown revision or config) is
    one line: 'cannot load <shown> (<type>: <first line>) — <fix>', as `error`."""
    try:
        import datasets
    except ImportError:
        raise LvuError(f"reading {what} from the hub needs `datasets`: pip install 'lvu[hub]' (or {instead})") from None
    try:
        loaded = datasets.load_dataset(repo, *args, **kwargs)
        return [dict(r) for r in loaded] if rows else loaded
    except Exception as e:  # noqa: BLE001 — whatever the hub raises becomes one line
        first = str(e).splitlines()[0] if str(e) else ""
        raise error(f"cannot load {shown} ({type(e).__name__}: {first}) — {fix}") from None


# ---- release files ---------------------------------------------------------------------------------


def read_text(path: Path, *, missing: str, unreadable: str) -> str:
    """A release file's UTF-8 text (a BOM dropped). DataError '<path>: file not found[ — <missing>]'
    or '<path>: cannot read (<error>) — <unreadable>'."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DataError(f"{path}: file not found" + (f" — {missing}" if missing else "")) from None
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: cannot read ({e}) — {unreadable}") from None


def json_error(path: Path, e: json.JSONDecodeError, fix: str) -> DataError:
    """'<path>: not valid JSON (<why>) at line L, column C — <fix>'."""
    return DataError(f"{path}: not valid JSON ({e.msg}) at line {e.lineno}, column {e.colno} — {fix}")


def parse_json(text: str, path: Path, *, fix: str, trailing_commas: bool = False) -> Any:
    """The JSON value of a file's text; with `trailing_commas`, commas right before } or ] are
    forgiven (hand-edited templates have them). DataError from `json_error` otherwise."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        if not trailing_commas:
            raise json_error(path, e, fix) from None
    try:
        return json.loads(drop_trailing_commas(text))
    except json.JSONDecodeError as e:
        raise json_error(path, e, fix) from None


def drop_trailing_commas(text: str) -> str:
    """JSON text without commas that directly precede } or ] (outside strings)."""
    out, in_str, esc, n = [], False, False, len(text)
    for i, ch in enumerate(text):
        if in_str:
            esc, in_str = (False, in_str) if esc else (ch == "\\", ch != '"')
        elif ch == '"':
            in_str = True
        elif ch == ",":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j < n and text[j] in "}]":
                continue
        out.append(ch)
    return "".join(out)


def json_lines(text: str, name: str | Path) -> list[tuple[str, Any]]:
    """('<name>:<line>', record) per non-blank JSON line; a line that does not parse gives an
    `Unparsed` reason in place of its record, so one bad line never stops the others."""
    return list(iter_json_lines(text, name))


def iter_json_lines(text: str, name: str | Path) -> Iterator[tuple[str, Any]]:
    """`json_lines` one line at a time: a loader that turns each record into a Sample at once never
    holds every parsed record beside every Sample (a 100,000-line file's peak memory halves)."""
    for lineno, line in enumerate(io.StringIO(text), 1):
        if line.strip():
            try:
                yield f"{name}:{lineno}", json.loads(line)
            except json.JSONDecodeError as e:
                yield f"{name}:{lineno}", Unparsed(f"not valid JSON ({e.msg} at column {e.colno})")


# ---- records -> Samples ----------------------------------------------------------------------------


def default_repeat(sample_id: str, first: str) -> str:
    return f"id {sample_id!r} repeats {first} — ids must be unique"


def collect_samples(
    records: Iterable[tuple[str, Any]],
    to_sample: Callable[[str, Any], Sample | None],
    *,
    repeated: Callable[[str, str], str] = default_repeat,
) -> tuple[list[Sample], list[BadRecord]]:
    """Samples of (where, record) pairs through `to_sample(where, record)` (None: the record is
    skipped). A RecordError becomes BadRecord(id=where, error='<where>: <error>'), and so does a
    sample whose id an earlier record had, with `repeated(id, where of the first)` as the error."""
    samples: list[Sample] = []
    bad: list[BadRecord] = []
    seen: dict[str, str] = {}
    for where, record in records:
        try:
            sample = to_sample(where, record)
            if sample is None:
                continue
            if sample.id in seen:
                raise RecordError(repeated(sample.id, seen[sample.id]))
        except RecordError as e:
            bad.append(BadRecord(id=where, error=f"{where}: {e}"))
            continue
        seen[sample.id] = where
        samples.append(sample)
    return samples, bad
