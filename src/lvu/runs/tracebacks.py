"""The Python traceback kept with a sample that failed because code raised (a model plugin, a
backend, a decoder, a judge): `SampleResult.traceback`, shown by `lvu results show RUN --trace ID`,
the viewer's sample page and `lvu run --debug`.

An LvuError is a user-facing message that says everything (a missing file, a bad argument): it
gets no traceback. Anything else is a bug somewhere, and its frames are what finds it.
"""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING

from lvu.errors import LvuError

if TYPE_CHECKING:
    from lvu.runs.store import Store

MAX_LINES = 60
MAX_CHARS = 20_000
"""A stored traceback keeps its last MAX_LINES lines and MAX_CHARS characters: the innermost
frames and the exception line (a deep recursion would otherwise store megabytes per sample)."""


def traceback_text(error: BaseException) -> str | None:
    """`error`'s formatted traceback (chained causes included), cut to its last MAX_LINES lines /
    MAX_CHARS characters; None for an LvuError, whose one line is the whole story."""
    if isinstance(error, LvuError):
        return None
    lines = "".join(traceback.format_exception(error)).rstrip("\n").splitlines()
    if len(lines) > MAX_LINES:
        lines = [f"... ({len(lines) - MAX_LINES} earlier lines left out)", *lines[-MAX_LINES:]]
    text = "\n".join(lines)
    if len(text) > MAX_CHARS:
        text = "... (earlier lines left out)\n" + text[-MAX_CHARS:].split("\n", 1)[-1]
    return text


def traced_failures(store: Store, run_id: str, keep: set[str] | None = None) -> tuple[list[str], str | None]:
    """(the failed samples of the run whose record holds a traceback, in run order; the first one's
    traceback), restricted to the sample ids in `keep` when given. Reads only those records."""
    rows = store.db.execute(
        "SELECT sample_id, json_extract(record, '$.traceback') FROM samples WHERE run_id = ?"
        " AND error IS NOT NULL AND json_extract(record, '$.traceback') IS NOT NULL ORDER BY ordinal, sample_id",
        (run_id,))
    ids: list[str] = []
    first: str | None = None
    for sample_id, text in rows:
        if keep is None or sample_id in keep:
            ids.append(sample_id)
            first = text if first is None else first
    return ids, first
