"""How a run goes, declared once: `RunOptions` travels from `lvu run` / `lvu sweep` / a run spec's
keys through `lvu.api.run` to the executor (lvu.runs.engine.run_local, lvu.runs.ray_executor.run_on_ray).

None of these options changes the run id (lvu.runs.identity): they say how, where and how much of
a run is computed, not what it computes. `PlannedOptions` are those a run spec (`lvu run -c`,
lvu.runs.spec_file) may set per run; `RunOptions` adds those of one invocation (where results go,
--fresh, the report, the progress display). A bad value is the one-line LvuError `lvu run` gives
for its flag, e.g. `--limit 0: must be at least 1 ...`.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lvu.errors import LvuError


def _option(default: Any, description: str, *, refusal: str | None = None, **constraints: Any) -> Any:
    """A field with its one-line description and, where the flag has one, the message that refuses
    a bad value (`{value}` is the value given)."""
    return Field(default, description=description, json_schema_extra={"refusal": refusal} if refusal else None,
                 **constraints)


class PlannedOptions(BaseModel):
    """The options a run spec sets per run (its `settings:`, benchmark and model entries)."""

    model_config = ConfigDict(extra="forbid")

    limit: int | None = _option(
        None, "Only the first K samples (K >= 1); None runs them all.", ge=1,
        refusal="--limit {value}: must be at least 1 (the first K samples) — leave --limit out to run them all")
    concurrency: int = _option(4, "Samples in flight at once (per model replica on Ray).", ge=1,
                               refusal="--concurrency {value}: must be at least 1")
    decode: Literal["threads", "processes"] = _option(
        "threads", "Decode frames in threads, or in processes that write the frame cache the run then reads.",
        refusal="decode={value!r} is unknown — use threads or processes")
    decode_workers: int = _option(2, "Decoding threads or processes.", ge=1,
                                  refusal="--decode-workers {value}: must be at least 1")
    asr: bool = _option(False, "Transcribe the audio (Whisper, lvu[asr]) of samples that have no subtitles.")
    judge: str | None = _option(None, "Judge model (registry name) for open-ended and generation samples; "
                                      "not part of the run id.")
    judge_args: dict[str, Any] | None = _option(None, "The judge model's arguments.")
    llm_extract: bool = _option(False, "Ask the judge to map replies without an option to one (needs `judge`).")
    executor: Literal["local", "ray"] = _option("local", "local, or ray: the same pipeline on a Ray cluster "
                                                         "(docs/ray.md).",
                                                refusal="executor {value!r} is unknown — use local or ray")
    ray_address: str | None = _option(None, "Ray cluster to join (ray://HOST:10001, HOST:6379 or auto); "
                                            "default $RAY_ADDRESS, else a local Ray.")
    ray_args: dict[str, Any] | None = _option(None, "The Ray executor's settings (lvu.runs.ray_executor.RayOptions: "
                                                    "num_replicas, num_gpus, ...).")

    def planned(self) -> dict[str, Any]:
        """The planned options that are set (not None), as a run spec's run carries them."""
        return {k: v for k, v in self.model_dump(include=set(PlannedOptions.model_fields)).items() if v is not None}


class RunOptions(PlannedOptions):
    """Every option of a run, once: its type, default, description and check. `lvu.api.run` takes
    one (`options=`) or its fields as keywords (`run("haystack", "ocr-match", limit=20)`)."""

    results_dir: Path | None = _option(None, "Where results are stored (default: lvu.runs.location's rule).")
    fresh: bool = _option(False, "Discard stored results of this exact run and start over, asking the model again.")
    frame_cache: bool = _option(True, "Use the shared on-disk frame cache (False: decode every time).")
    show_progress: bool = _option(True, "Show the pipeline's progress display.")
    report: bool = _option(True, "Write the run's HTML report (lvu.api.run).")
    env: dict[str, Any] | None = _option(None, "Entries added to the stored environment (e.g. a sweep membership).")

    @model_validator(mode="after")
    def _consistent(self) -> RunOptions:
        if self.llm_extract and self.judge is None:
            raise ValueError("llm_extract needs a judge model — pass judge= (--judge NAME)")
        if self.executor == "local" and self.decode == "processes" and not self.frame_cache:
            raise ValueError("decode=processes decodes into the frame cache — drop --no-cache or use --decode threads")
        return self

    @model_validator(mode="wrap")
    @classmethod
    def _one_line(cls, data: Any, handler: Any) -> Any:
        """Any bad value or key is one LvuError line (as `lvu run` says it), never pydantic's report."""
        try:
            return handler(data)
        except ValidationError as e:
            raise LvuError(refusal(e)) from None

    @classmethod
    def parse(cls, values: Mapping[str, Any] | None = None, base: RunOptions | None = None) -> RunOptions:
        """`values` (e.g. keyword arguments, a planned run's options) over `base`'s set fields."""
        given = {**(base.model_dump(exclude_unset=True) if base is not None else {}), **(values or {})}
        return cls(**given)

    def given(self) -> dict[str, Any]:
        """The fields set explicitly (over the defaults): what overrides a planned run's options."""
        return self.model_dump(exclude_unset=True)


def refusal(error: ValidationError) -> str:
    """The one line for the first problem of a RunOptions validation."""
    first = error.errors()[0]
    loc = [str(part) for part in first["loc"]]
    if first["type"] == "value_error" and not loc:  # a check across options (_consistent)
        return str(first["ctx"]["error"])
    name = loc[0] if loc else ""
    known = list(RunOptions.model_fields)
    if first["type"] == "extra_forbidden":
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return f"{name}: not a run option{hint} — known: {', '.join(known)}"
    value = first.get("input")
    field = RunOptions.model_fields.get(name)
    extra = field.json_schema_extra if field is not None else None
    if first["type"] in ("greater_than_equal", "literal_error") and isinstance(extra, dict) \
            and isinstance(extra.get("refusal"), str):
        return str(extra["refusal"]).format(value=value)
    return f"{name}={value!r}: {first['msg']}"
