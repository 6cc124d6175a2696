"""Where lvu keeps things it can rebuild: the generated haystack, OCR results, decoded frames."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    """`$LVU_CACHE_DIR/<parts>` when set, else the user cache dir (`~/.cache/lvu/<parts>` on Linux).

    Only computes the path; callers create what they write.
    """
    root = os.environ.get("LVU_CACHE_DIR")
    if not root:
        import platformdirs

        root = platformdirs.user_cache_dir("lvu")
    return Path(root).expanduser().joinpath(*parts)


# ---- names that come from data ------------------------------------------------------------------

_UNSAFE = ("/", "\\", "\0")


def safe_name(name: str, what: str) -> str:
    """`name` (an id read from a data file) as one file name inside a folder lvu writes; refused
    when it could name anything else: empty, `.`/`..`, a leading dot (a hidden file such as
    .bashrc), a path separator or NUL. Ids are refused, not rewritten: a rewritten id would no
    longer match the records that carry it."""
    from lvu.errors import LvuError

    if not isinstance(name, str) or not name or name.startswith(".") or any(c in name for c in _UNSAFE):
        raise LvuError(f"{what}: {name!r} cannot name a file in the output (no path separators, no leading "
                       "'.', not empty) — fix that id in the input file")
    return name


def inside(folder: Path, *names: str, what: str) -> Path:
    """`folder/names...`, each name checked by `safe_name`, and refused unless the path it resolves
    to (symlinked folders followed) is still inside `folder`: nothing lvu writes or unlinks is elsewhere."""
    from lvu.errors import LvuError

    root = Path(folder).resolve()
    path = root.joinpath(*(safe_name(n, what) for n in names))
    if not path.parent.resolve().is_relative_to(root):
        raise LvuError(f"{what}: {path.parent} leads outside {root} (a symlinked folder) — "
                       "remove that link or export to a new folder")
    return path
