"""Readable terminal output everywhere: consoles that never cut a table when piped, tables whose
cells fold instead of ending in "…", and `--help` without `<bool>` hints on flags.

Imports stay light (rich, typer): `lvu --help` loads this module.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

# Piped output (a file, grep, less) has no width to fit: rich would assume 80 columns (or
# $COLUMNS) and squeeze tables into "…". A wide console keeps every cell whole; tables still only
# take the width their cells need, and text prints with soft wrapping as before.
PIPED_WIDTH = 4000
RUN_ID_WIDTH = 12  # run ids are 12 hex characters (lvu/runs/identity.py)


def make_console(stderr: bool = False) -> Console:
    console = Console(stderr=stderr, soft_wrap=True)
    if not console.is_terminal:
        console = Console(stderr=stderr, soft_wrap=True, width=PIPED_WIDTH)
    return console


def fold_cells(table: Table) -> Table:
    """On a narrow terminal, wrap long cells (and fold long words) rather than cutting them with
    "…"; columns declared no_wrap (run ids) keep their width."""
    for column in table.columns:
        if not column.no_wrap:
            column.overflow = "fold"
    return table


def failure_line(sample_id: str, error: str) -> str:
    """A failed sample as one line that starts with its id ('q07: model error: ...'), the id not
    repeated when the error already starts with it."""
    return error if error.startswith(f"{sample_id}: ") else f"{sample_id}: {error}"


def add_id_column(table: Table, header: str = "run") -> None:
    """A run-id column: the whole 12-character id on one line, never shortened."""
    table.add_column(header, no_wrap=True, min_width=RUN_ID_WIDTH, overflow="fold")


def hide_flag_types() -> None:
    """typer >= 0.2x shows a type hint for every option, `--fresh <bool>` included, although a flag
    takes no value: show none for flags, and `<str>` (repeatable) rather than `<list[str]>`."""
    try:
        from typer.core import TyperOption
    except ImportError:  # pragma: no cover  (older typer: no type column to fix)
        return
    original = TyperOption.display_type_rich
    if getattr(original, "_lvu_patched", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        if self.is_flag and self.metavar is None:
            return None
        shown = original(self, ctx)
        if isinstance(shown, str) and shown.startswith("<list[") and shown.endswith("]>"):
            return f"<{shown[6:-2]}>"
        return shown

    display_type_rich._lvu_patched = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]
