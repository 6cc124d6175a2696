"""What a report is made of: sections of text, tables, figures and a run's samples.

report.py builds a Report from stored runs; render.py writes one as HTML or Markdown. Both import
these classes from here, so neither imports the other's module to know the shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lvu.analysis.runs import RunData
from lvu.analysis.table import Table


@dataclass
class Figure:
    caption: str
    png: bytes


@dataclass
class Section:
    """A titled block of a report. `samples` (a run's results) renders as the per-sample table."""

    title: str
    anchor: str
    level: int = 2
    text: list[str] = field(default_factory=list)
    summary: list[tuple[str, str]] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    samples: RunData | None = None


@dataclass
class Report:
    title: str
    sections: list[Section]
    notes: list[str] = field(default_factory=list)
    viewer_url: str | None = None
    """Base URL of `lvu view`: sample ids then link to its sample pages."""
