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
