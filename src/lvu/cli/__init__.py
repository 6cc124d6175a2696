"""The `lvu` command line, one module per command group: root.py registers them all (`app`, `main`),
common.py holds what they share. A command parses its arguments, calls the library (lvu.api and the
layers below) and prints; the work itself lives in the library, so Python users get it too."""

from lvu.cli.root import app, main, parse_kv

__all__ = ["app", "main", "parse_kv"]
