"""The stored replies of a run that held no readable answer (lvu.runs.run_names.is_unreadable),
read without parsing every record: SQLite picks the candidates (multiple choice, no error, a
prediction that is not an option index or LongVideoBench's random pick), Python applies the rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lvu.runs.run_names import RANDOM_PICK, unreadable
from lvu.types import SampleResult

if TYPE_CHECKING:
    from lvu.runs.store import Store

_OPTIONS = "COALESCE(json_extract(record, '$.n_options'), json_array_length(record, '$.options'), 0)"
_CANDIDATES = (
    "SELECT record FROM samples WHERE run_id = ? AND error IS NULL"
    " AND json_type(record, '$.response') IS NOT NULL AND json_type(record, '$.response') != 'null'"
    f" AND {_OPTIONS} > 0"
    " AND (json_type(record, '$.prediction') IS NOT 'integer'"
    f" OR json_extract(record, '$.prediction') NOT BETWEEN 0 AND {_OPTIONS} - 1"
    " OR instr(COALESCE(json_extract(record, '$.explanation'), ''), ?) > 0)"
    " ORDER BY ordinal, sample_id")


def stored_unreadable(store: Store, run_id: str, keep: set[str] | None = None) -> tuple[list[SampleResult], int]:
    """(the run's unreadable replies in run order, how many of its samples were answered without an
    error), both restricted to the sample ids in `keep` when given."""
    rows = store.db.execute(_CANDIDATES, (run_id, RANDOM_PICK))
    bad = [r for r in unreadable(SampleResult.model_validate_json(record) for (record,) in rows)
           if keep is None or r.sample_id in keep]
    answered = store.db.execute("SELECT sample_id FROM samples WHERE run_id = ? AND error IS NULL", (run_id,))
    n_answered = sum(1 for (sample_id,) in answered if keep is None or sample_id in keep)
    return bad, n_answered


def unreadable_in_scope(store: Store, run_id: str, keep: set[str], stamp: str) -> tuple[list[SampleResult], int]:
    """`stored_unreadable` for the end of a run, read only when there may be some: the run's
    cached summary (lvu.runs.summaries), when current and made by this code (`stamp`, its
    `code_stamp`), says how many the whole run has — none there, none in `keep` — so resuming a
    finished run of a model that answers reads no record."""
    cached = store.current_summaries().get(run_id)
    if cached is not None and cached[2] == 0 and cached[0] == stamp:
        return [], 0
    return stored_unreadable(store, run_id, keep)
