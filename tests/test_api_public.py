"""The public surface: `import lvu; lvu.run(...); lvu.read_run(...)`, with `import lvu` (which every
`import lvu.<module>` runs) staying cheap — lvu.api is imported on first use of one of its names."""

from __future__ import annotations

import subprocess
import sys

import pytest

import lvu
import lvu.api
import lvu.version


def test_every_public_name_is_the_apis():
    assert set(lvu.__all__) - {"__version__"} <= set(lvu.api.__all__)
    for name in lvu.__all__:
        assert getattr(lvu, name) is getattr(lvu.api, name) if name != "__version__" else lvu.version.__version__
        assert name in dir(lvu)
    assert {"run", "read_run", "score", "import_results", "report", "compare", "judge", "build"} <= set(lvu.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        lvu.nope  # noqa: B018


def test_importing_lvu_or_its_modules_does_not_import_the_api():
    code = ("import sys, lvu, lvu.types; print('lvu.api' in sys.modules, 'lvu.runs.engine' in sys.modules); "
            "lvu.read_run; print('lvu.api' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "True"]


def test_the_version_lives_in_its_own_module():
    """Modules below the API (the engine, the importer, the frame cache) record it from lvu.version:
    importing the `lvu` package module from there would be an upward import (tests/test_layering.py)."""
    assert lvu.__version__ == lvu.version.__version__ == "0.1.0"


def test_lvu_api_lists_every_lazy_name_once():
    """`__all__` (what `from lvu.api import *` and linters read) and the lazy table name the same names."""
    import lvu.api

    assert sorted(lvu.api.__all__) == sorted(lvu.api._WHERE) and len(set(lvu.api.__all__)) == len(lvu.api.__all__)
