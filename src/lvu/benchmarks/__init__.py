"""Every module in this package registers itself on import; `load_all` imports them all."""

import importlib
import pkgutil


def load_all() -> None:
    """Register the built-ins. Plugins need no loading here: installed packages' `lvu.benchmarks` entry
    points and `module:Class` names resolve when first asked for (lvu.registry, docs/plugins.md)."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
