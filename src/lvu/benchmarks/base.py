"""The Benchmark interface: one subclass holds one benchmark's whole protocol.

load -> plan -> build_prompt -> extract -> score -> aggregate. The run engine calls these in
that order; a benchmark never sees a model backend.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pydantic import BaseModel

from lvu.registry import Registry
from lvu.types import Frame, InputPlan, Prediction, Prompt, Response, Sample, SampleResult, Score, Subtitle


class BadRecord(BaseModel):
    """A release record that could not become a Sample; recorded as a failed sample."""

    id: str
    error: str


class Breakdown(BaseModel):
    """One table of a report: rows of (group, n, score)."""

    title: str
    rows: list[tuple[str, int, float]]
    """(group name, samples counted, mean score in percent)."""


class Benchmark(ABC):
    """Base class. Subclasses set `defaults` (their paper's input settings) and implement the steps."""

    name: ClassVar[str] = ""
    defaults: ClassVar[dict[str, Any]] = {}
    """Input settings the paper used; users override any of them per run."""

    def __init__(self, **settings: Any) -> None:
        unknown = set(settings) - set(self.defaults) - {"data", "video_dir", "limit"}
        if unknown:
            from lvu.errors import LvuError

            raise LvuError(
                f"benchmark {self.name!r} has no setting(s) {', '.join(sorted(unknown))}; "
                f"known: {', '.join(sorted(self.defaults))}"
            )
        self.settings: dict[str, Any] = {**self.defaults, **{k: v for k, v in settings.items() if v is not None}}

    @abstractmethod
    def load(self) -> tuple[list[Sample], list[BadRecord]]:
        """Read the release files. Per-record problems come back as BadRecords, not exceptions."""

    @abstractmethod
    def plan(self, sample: Sample, duration: float) -> InputPlan:
        """Frame times and subtitle mode for this sample, given the video's duration."""

    @abstractmethod
    def build_prompt(self, sample: Sample, frames: list[Frame], cues: list[Subtitle]) -> Prompt:
        """The exact prompt: frames and selected cues arranged with the protocol's text."""

    @abstractmethod
    def extract(self, sample: Sample, response: Response) -> Prediction:
        """The official answer extraction."""

    @abstractmethod
    def score(self, sample: Sample, prediction: Prediction) -> Score:
        """Judge one prediction."""

    def aggregate(self, results: list[SampleResult]) -> list[Breakdown]:
        """Tables in the paper's layout. Default: overall plus one table per label key."""
        from lvu.scoring.choice import breakdowns_by_label

        return breakdowns_by_label(results)


BENCHMARKS: Registry[Benchmark] = Registry("benchmark")
register_benchmark = BENCHMARKS.register
