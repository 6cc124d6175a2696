"""VLMEvalKit's prediction sheets read as rows: .tsv / .csv (pandas' to_csv), .xlsx (openpyxl) or
JSON records; a sheet whose quoting merged rows, or whose predictions are unsaved formulas, is
refused rather than read as fewer or empty answers (lvu.runs.saved_files joins the rows)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from lvu.errors import DataError, LvuError


def read_table(path: Path, text: str | None) -> list[tuple[str, dict]]:
    """(where, row) per data row of a VLMEvalKit sheet: .tsv / .csv (pandas' to_csv), .xlsx (openpyxl),
    or JSON records."""
    suffix = path.suffix.lower()
    if suffix == ".xlsx":
        return _xlsx_rows(path)
    assert text is not None
    if suffix not in (".tsv", ".csv"):
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None
        if isinstance(whole, list) and all(isinstance(r, dict) for r in whole):
            return [(f"{path}: record {i + 1}", r) for i, r in enumerate(whole)]
        raise DataError(f"{path}: not a VLMEvalKit prediction file — expected .xlsx, .tsv, .csv or a JSON "
                        "list of records with a 'prediction' field")
    csv.field_size_limit(1 << 30)  # long replies
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="\t" if suffix == ".tsv" else ",")
    if not reader.fieldnames or "prediction" not in reader.fieldnames:
        raise DataError(f"{path}: no 'prediction' column (columns: {', '.join(reader.fieldnames or [])}) — pass "
                        "VLMEvalKit's <model>_<dataset> prediction file")
    rows = [(f"{path}: row {i + 2}", dict(r)) for i, r in enumerate(reader)]
    _no_merged_rows(path, rows, "\t" if suffix == ".tsv" else ",")
    return rows


def _no_merged_rows(path: Path, rows: list[tuple[str, dict]], delimiter: str) -> None:
    """Refuse a sheet whose quoting swallowed rows: a stray `"` opening a field makes the reader take
    every line up to the next `"` as that one field (VLMEvalKit's index column starts each row, so a
    field holding a line break followed by `<number><delimiter>` is a row eaten by another)."""
    eaten = re.compile(rf"\n\d+{re.escape(delimiter)}")
    for where, row in rows:
        for column, value in row.items():
            if isinstance(value, str) and eaten.search(value):
                raise DataError(f"{where}: its {column!r} field runs over the rows after it — a stray '\"' opens "
                                "a quoted field there; fix that quote (or re-save the sheet with pandas) and import again")


def _xlsx_rows(path: Path) -> list[tuple[str, dict]]:
    try:
        import openpyxl
    except ImportError:
        raise LvuError(f"{path}: reading .xlsx needs openpyxl — pip install 'lvu[xlsx]' (or openpyxl), or "
                       "save the sheet as .tsv (VLMEvalKit: PRED_FORMAT=tsv)") from None
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as e:  # noqa: BLE001 — zip/XML errors of a damaged file: one line
        raise DataError(f"{path}: not a readable .xlsx file ({type(e).__name__}: {e})") from None
    try:
        values = list(book.worksheets[0].iter_rows(values_only=True))
    finally:
        book.close()
    if not values:
        return []
    header = [str(h) if h is not None else "" for h in values[0]]
    if "prediction" not in header:
        raise DataError(f"{path}: no 'prediction' column in its first sheet — pass VLMEvalKit's "
                        "<model>_<dataset>.xlsx prediction file")
    column = header.index("prediction")
    if any(row[column] is None for row in values[1:] if len(row) > column and any(v is not None for v in row)):
        _no_unsaved_formulas(path, column)
    return [(f"{path}: row {i + 2}", dict(zip(header, row))) for i, row in enumerate(values[1:])
            if any(v is not None for v in row)]


def _no_unsaved_formulas(path: Path, column: int) -> None:
    """Refuse prediction cells that are formulas without a saved value (a sheet written by a
    program, never opened in a spreadsheet app): read as values they are empty responses."""
    import openpyxl

    book = openpyxl.load_workbook(path, read_only=True, data_only=False)
    try:
        for i, row in enumerate(book.worksheets[0].iter_rows(values_only=True, min_row=2)):
            cell = row[column] if len(row) > column else None
            if isinstance(cell, str) and cell.startswith("="):
                raise DataError(f"{path}: row {i + 2}: its prediction is a formula ({cell[:40]}) with no saved value — "
                                "open and save the sheet in a spreadsheet app, or export it as .tsv, then import again")
    finally:
        book.close()


_NFRAME = re.compile(r"_(\d+)frame(?=_|$)")
_FPS = re.compile(r"_(\d+(?:\.\d+)?)fps(?=_|$)")


def frames_in_name(path: Path) -> dict[str, int | float]:
    """What VLMEvalKit's dataset name in the file name says about frames: its video datasets are
    named `<dataset>_<N>frame[...]` or `<dataset>_<X>fps[...]` (`..._Video-MME_8frame.xlsx` →
    {"frames": 8}, `..._MLVU_1fps.tsv` → {"fps": 1.0}); {} when the name states neither."""
    if m := _NFRAME.search(path.stem):
        return {"frames": int(m.group(1))}
    if m := _FPS.search(path.stem):
        return {"fps": float(m.group(1))}
    return {}
