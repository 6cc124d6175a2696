"""`lvu list`: what is registered — benchmarks and models, built-in and installed plugins
(docs/plugins.md) — and one benchmark's settings (what `--set` takes: name, default, description)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lvu.errors import LvuError

BROKEN = "(cannot load"
"""How a registered part that cannot be imported begins its description (a broken plugin)."""


@dataclass(frozen=True)
class Part:
    """A registered benchmark or model: its name and the first line of its docstring."""

    name: str
    description: str
    broken: bool = False
    """True when it cannot be loaded; `description` then says why ('(cannot load: ...)')."""


@dataclass(frozen=True)
class SettingDoc:
    """One benchmark setting: its name, its default (None: unset) and what it does."""

    name: str
    default: Any
    description: str


def _parts(registry: Any) -> list[Part]:
    out = []
    for name in registry.names():
        try:
            doc = (registry.get(name).__doc__ or "").strip().splitlines()
        except LvuError as e:  # a broken plugin is listed with its problem; the others still show
            doc = [f"{BROKEN}: {e})"]
        first = doc[0] if doc else ""
        out.append(Part(name, first, broken=first.startswith(BROKEN)))
    return out


@dataclass(frozen=True)
class Catalog:
    """What `lvu list` shows: the registered benchmarks, then the model backends."""

    benchmarks: list[Part]
    models: list[Part]


def list_parts() -> Catalog:
    """The registered benchmarks and models, built-in and plugins, each in its registry's order;
    a plugin that cannot be imported is listed with its problem (`Part.broken`)."""
    from lvu.benchmarks import load_all as load_benchmarks
    from lvu.benchmarks.base import BENCHMARKS
    from lvu.models import load_all as load_models
    from lvu.models.base import MODELS

    load_benchmarks()
    load_models()
    return Catalog(benchmarks=_parts(BENCHMARKS), models=_parts(MODELS))


def benchmark_settings(benchmark: str) -> list[SettingDoc]:
    """A benchmark's settings (`lvu list --settings BENCHMARK`), in its Settings model's order;
    an unknown name is the registry's one-line error, with suggestions."""
    from lvu.benchmarks import load_all
    from lvu.benchmarks.base import BENCHMARKS

    load_all()
    model = BENCHMARKS.get(benchmark).Settings
    docs = model.docs()
    return [SettingDoc(name, default, docs.get(name, "")) for name, default in model.defaults().items()]
