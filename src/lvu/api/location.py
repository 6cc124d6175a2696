"""Where results are (docs/runs.md, "Where results are"): the one rule every command follows
(`results_location`), its wording for a `--results-dir` help, the line a command prints, and the
folder of runs already stored (`existing_results`: a one-line error saying where lvu looked when
there is none) with its `Store`. The commands (lvu.cli.common) get them here, so a Python user
finds the same folder `lvu` would."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from lvu.runs.location import RESULTS_DIR_HELP, RESULTS_DIR_RULE, existing_results, location_line, results_location

if TYPE_CHECKING:
    from lvu.runs.store import Store

__all__ = ["RESULTS_DIR_HELP", "RESULTS_DIR_RULE", "Store", "existing_results", "location_line",
           "results_location", "where_results_are"]


def where_results_are(results_dir: str | Path | None = None) -> str:
    """'results: /abs/lvu-results (why there)': the line `lvu run` prints after its runs, for the
    folder `results_location` picks (which may not exist yet: a run creates it)."""
    return location_line(*results_location(results_dir))



def __getattr__(name: str) -> Any:
    """`Store` on first use: this module stays as light as lvu.runs.location (the commands' help
    texts come from here), the store and its pydantic models load when a command opens runs."""
    if name == "Store":
        from lvu.runs.store import Store

        return Store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
