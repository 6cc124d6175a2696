"""Name -> class registries, one per kind of pluggable part (models, benchmarks).

A name resolves, in order, to:
- a built-in, registered by the `@register_model` / `@register_benchmark` decorators;
- a plugin an installed package declares in the registry's entry-point group (`lvu.models`,
  `lvu.benchmarks`), loaded only when asked for, so a broken plugin never breaks other runs;
- `module:Class` — a class in any importable module (`lvu run -m my_pkg.my_module:MyModel`).
The name is kept as typed (it is what the run spec stores). docs/plugins.md has examples.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import os
import sys
from importlib import metadata
from typing import Any, Callable, Generic, TypeVar

from lvu.errors import LvuError

T = TypeVar("T")

DOCS = "docs/plugins.md"


def _import_module(module_name: str) -> Any:
    """Import a module; when it is not found, also look in the current folder (the `lvu` script,
    unlike `python -m`, does not put it on sys.path): `lvu run -m my_models:Mine` from the folder
    holding my_models.py works. Appended last, so an installed module of the same name wins."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        cwd = os.getcwd()
        if e.name != module_name.split(".")[0] or cwd in sys.path or "" in sys.path:
            raise
        sys.path.append(cwd)
        return importlib.import_module(module_name)


class Registry(Generic[T]):
    def __init__(self, kind: str, *, base: type | None = None, group: str | None = None) -> None:
        self.kind = kind
        self.base = base
        """Every class this registry hands out subclasses it (checked for plugins)."""
        self.group = group
        """Entry-point group installed packages declare their plugins in."""
        self._items: dict[str, type[T]] = {}
        self._entry_points: dict[str, metadata.EntryPoint] | None = None
        self._resolved: dict[str, type[T]] = {}

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        def deco(cls: type[T]) -> type[T]:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._items[name] = cls
            cls.name = name  # type: ignore[attr-defined]
            return cls

        return deco

    def get(self, name: str) -> type[T]:
        if name in self._items:
            return self._items[name]
        if name in self._resolved:
            return self._resolved[name]
        if name in self.entry_points():
            ep = self.entry_points()[name]
            cls = self._check(name, self._load_entry_point(name), f" (entry point {ep.value}, {self.group})")
        elif ":" in name:
            cls = self._check(name, self._import(name), "")
        else:
            close = difflib.get_close_matches(name, self.names(), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise LvuError(
                f"unknown {self.kind} {name!r}.{hint} Known: {', '.join(self.names())} "
                f"— or your own class as module:Class ({DOCS})"
            )
        if "name" not in vars(cls):  # its reports and errors then say what the user typed
            cls.name = name  # type: ignore[attr-defined]
        self._resolved[name] = cls
        return cls

    def registered_name(self, cls: type) -> str | None:
        """The name `cls` is registered under, or None when that name does not find `cls` again (a
        run, import or build records the name, so it must resolve to the same class later)."""
        name = getattr(cls, "name", "")
        try:
            return name if name and self.get(name) is cls else None
        except LvuError:
            return None

    def names(self) -> list[str]:
        """Built-ins and installed plugins (`module:Class` names are not listed: any module works)."""
        return sorted({*self._items, *self.entry_points()})

    # ---- plugins -----------------------------------------------------------------------------------

    def entry_points(self) -> dict[str, metadata.EntryPoint]:
        """The installed packages' entry points of this registry's group (found once, loaded lazily);
        a built-in name wins over a plugin of the same name."""
        if self._entry_points is None:
            found = metadata.entry_points(group=self.group) if self.group else ()
            self._entry_points = {ep.name: ep for ep in found}
        return {k: v for k, v in self._entry_points.items() if k not in self._items}

    def _load_entry_point(self, name: str) -> Any:
        ep = self.entry_points()[name]
        try:
            return ep.load()
        except Exception as e:  # the plugin's own bug or missing dependency: one line, naming it
            raise LvuError(f"{self.kind} {name!r}: loading entry point {ep.value!r} ({self.group}) failed: "
                           f"{type(e).__name__}: {e} — fix or reinstall the package that declares it") from None

    def _import(self, name: str) -> Any:
        module_name, _, attr = name.partition(":")
        if not module_name or not attr:
            raise LvuError(f"{self.kind} {name!r}: write module:Class, e.g. my_pkg.my_module:MyModel ({DOCS})")
        try:
            module = _import_module(module_name)
        except ModuleNotFoundError as e:
            missing = e.name or module_name
            where = "" if missing == module_name else f" (it imports {missing!r}, which is missing)"
            raise LvuError(f"{self.kind} {name!r}: cannot import module {module_name!r}{where} — install it, "
                           f"or run from its folder / add that folder to PYTHONPATH ({DOCS})") from None
        except Exception as e:  # an error inside the user's module: one line, not a traceback
            raise LvuError(f"{self.kind} {name!r}: importing module {module_name!r} failed: "
                           f"{type(e).__name__}: {e}") from None
        obj: Any = module
        for part in attr.split("."):
            if not hasattr(obj, part):
                classes = sorted(k for k, v in vars(module).items()
                                 if isinstance(v, type) and self.base and issubclass(v, self.base) and v is not self.base)
                hint = f" — it has {', '.join(classes)}" if classes else ""
                raise LvuError(f"{self.kind} {name!r}: module {module_name!r} has no attribute {attr!r}{hint}")
            obj = getattr(obj, part)
        return obj

    def _check(self, name: str, obj: Any, via: str) -> type[T]:
        """A concrete subclass of `base`, else a one-line error saying what to change."""
        if self.base is not None and not (isinstance(obj, type) and issubclass(obj, self.base)):
            base = f"{self.base.__module__}.{self.base.__qualname__}"
            got = f"class {obj.__qualname__}" if isinstance(obj, type) else f"a {type(obj).__name__}"
            raise LvuError(f"{self.kind} {name!r}{via}: {got} is not a subclass of {base} — subclass it ({DOCS})")
        if inspect.isabstract(obj):
            missing = ", ".join(sorted(obj.__abstractmethods__))
            raise LvuError(f"{self.kind} {name!r}{via}: class {obj.__qualname__} does not implement {missing} "
                           f"— define {'them' if ',' in missing else 'it'} ({DOCS})")
        return obj
