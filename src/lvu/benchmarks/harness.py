"""Harness variants as objects: how one harness (the official protocol, lmms-eval at a release,
VLMEvalKit at a commit) runs a benchmark, where it differs from the others — frame plan, prompt,
answer extraction, scoring, aggregation.

Each benchmark module declares a base `Harness` subclass for itself with the official behaviour,
one subclass per peer that overrides only what that peer does differently, and a table
{compat value: class}. The benchmark picks its harness once, in `__init__`, with `pick` (the one
dispatch point), and its steps delegate to `self.harness`; nothing else branches on `compat`.
A new peer release is one new subclass and one table entry.

    class MlvuHarness(Harness["Mlvu"]):          # official
        def extract(self, sample, response): ...
    class MlvuLmmsEval(MlvuHarness):             # lmms-eval 0.7.2-0.7.3
        compat = "lmms-eval"
        def extract(self, sample, response): ...
    HARNESSES = {"official": MlvuHarness, "lmms-eval": MlvuLmmsEval, ...}

    self.harness = pick(HARNESSES, self.settings["compat"], "mlvu")(self)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Generic, Mapping, TypeVar

from lvu.scoring.lmms_eval import check_compat
from lvu.types import Prediction, Sample

if TYPE_CHECKING:
    from lvu.scoring.judge_tasks import JudgeTask

B = TypeVar("B")


class Harness(Generic[B]):
    """One harness's way of running benchmark `B`; holds the benchmark it serves (`self.bench`)."""

    compat: ClassVar[str] = "official"
    """The `compat` value that selects this harness."""
    peer: ClassVar[str] = "the official protocol (the paper and its released code)"
    """What it reproduces, for docs and errors: e.g. "lmms-eval 0.7.2-0.7.3 (lmms_eval/tasks/mlvu)"."""

    def __init__(self, bench: B) -> None:
        self.bench = bench

    @property
    def settings(self) -> dict[str, Any]:
        return self.bench.settings  # type: ignore[attr-defined]  # B is any benchmark class

    def choice_task(self, sample: Sample, prediction: Prediction, reply: str) -> JudgeTask | None:
        """The judge task this harness's own protocol asks to read the option a reply chooses
        (VLMEvalKit's MLVU judge), or None (the default): lvu's `--llm-extract` decides alone."""
        return None


H = TypeVar("H", bound=type)


def pick(harnesses: Mapping[str, H], compat: str, benchmark: str) -> H:
    """The harness class `compat` selects, or the one-line LvuError naming the values `benchmark` knows."""
    check_compat(compat, tuple(harnesses), benchmark)
    return harnesses[compat]
