"""lvu: long-video understanding benchmarks, run and scored under their official protocols.

The library's entry points are importable from here (docs/api.md):

    import lvu
    summary = lvu.run("haystack", "ocr-match", limit=20)
    record = lvu.read_run(summary.run_id)

Importing `lvu` stays cheap: every `import lvu.<module>` runs this file, so the API (lvu.api, which
loads the run engine) is imported on first use of one of its names (PEP 562 `__getattr__`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lvu.version import __version__

if TYPE_CHECKING:  # for checkers and editors; at run time __getattr__ below imports them
    from lvu.api import (
        run as run,
        run_planned as run_planned,
        read_run as read_run,
        score as score,
        import_results as import_results,
        report as report,
        compare as compare,
        judge as judge,
        build as build,
        RunOptions as RunOptions,
        RunRecord as RunRecord,
        ScoreResult as ScoreResult,
        ImportResult as ImportResult,
        ReportResult as ReportResult,
        CompareResult as CompareResult,
        JudgeResult as JudgeResult,
        BuildResult as BuildResult,
    )

__all__ = [
    "__version__",
    # the entry points (docs/api.md)
    "run", "run_planned", "read_run", "score", "import_results", "report", "compare", "judge", "build",
    # their options and typed results
    "RunOptions", "RunRecord", "ScoreResult", "ImportResult", "ReportResult", "CompareResult", "JudgeResult",
    "BuildResult",
]
_API = frozenset(__all__) - {"__version__"}


def __getattr__(name: str) -> Any:
    """`lvu.run` & co.: lvu.api's, imported the first time one is used."""
    if name in _API:
        import lvu.api

        value = getattr(lvu.api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'lvu' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
