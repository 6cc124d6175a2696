"""Typed benchmark settings: one pydantic model per benchmark, each field a setting with its default
(the paper's), its type and range, and a line of docs. `--set`, a YAML run spec and `lvu.run(...,
settings=...)` all end in `Benchmark.__init__`, which validates through the model, so every way in
gives the same one-line error.

    class LvbenchSettings(BenchmarkSettings):
        frames: int = Field(32, description="uniform frames (0: a blind text-only run)")

        @field_validator("frames", mode="before")
        @classmethod
        def _frames(cls, value: Any) -> int:
            return as_int("lvbench", "frames", value, low=0)   # raises the one-line LvuError

A validator raises LvuError (not ValueError) so its message reaches the user unchanged; anything
pydantic itself refuses becomes one line naming the setting (`settings_error`). The kept settings
dict, which is hashed into the run id, holds the validated values (tests/test_settings_pinned.py).

A plugin that declares only a `defaults` dict gets an untyped model made from it (`from_defaults`),
and a registered variant that changes only defaults (`longvideobench-frames`) gets its parent's
model with those defaults (`with_defaults`): one mechanism either way.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from lvu.errors import LvuError


class BenchmarkSettings(BaseModel):
    """Base of every benchmark's settings model. Fields: the settings; defaults: the paper's."""

    model_config = ConfigDict(extra="forbid", validate_default=False, arbitrary_types_allowed=True)

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """{setting: default}, in declaration order."""
        return {name: field.get_default(call_default_factory=True) for name, field in cls.model_fields.items()}

    @classmethod
    def docs(cls) -> dict[str, str]:
        """{setting: its one-line description} ('' where none is written)."""
        return {name: field.description or "" for name, field in cls.model_fields.items()}

    @classmethod
    def parse(cls, owner: str, values: dict[str, Any]) -> BenchmarkSettings:
        """The validated settings, or a one-line LvuError naming the setting and what it accepts.
        Validators find the registered name in `info.context["owner"]` (a variant's messages name it)."""
        try:
            return cls.model_validate(values, context={"owner": owner})
        except ValidationError as e:
            raise LvuError(settings_error(owner, e)) from None

    def as_dict(self) -> dict[str, Any]:
        """The settings as the plain dict the run id hashes (values as validated, not re-encoded)."""
        return {name: getattr(self, name) for name in type(self).model_fields}


def settings_error(owner: str, error: ValidationError) -> str:
    """pydantic's first complaint as one line: "benchmark 'x': frames='abc' — <what pydantic said>"."""
    first = error.errors()[0]
    key = ".".join(str(part) for part in first.get("loc", ())) or "settings"
    return f"benchmark {owner!r}: {key}={first.get('input')!r} — {first.get('msg', 'not accepted')}"


def from_defaults(name: str, defaults: dict[str, Any]) -> type[BenchmarkSettings]:
    """An untyped settings model (every field Any) for a benchmark that declares only `defaults`."""
    fields: dict[str, Any] = {key: (Any, value) for key, value in defaults.items()}
    return create_model(f"{name or 'Benchmark'}Settings", __base__=BenchmarkSettings, **fields)


def with_defaults(base: type[BenchmarkSettings], name: str, defaults: dict[str, Any]) -> type[BenchmarkSettings]:
    """`base` with some defaults changed (and keys it lacks added, untyped): a registered variant's model."""
    fields: dict[str, Any] = {}
    for key, value in defaults.items():
        field = base.model_fields.get(key)
        if field is None:
            fields[key] = (Any, value)
        elif field.get_default(call_default_factory=True) != value or type(field.default) is not type(value):
            fields[key] = (field.annotation, field.__class__.merge_field_infos(field, default=value))
    return create_model(f"{name}Settings", __base__=base, **fields) if fields else base
