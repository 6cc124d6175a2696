"""docs/api.md's examples run: every ```python block, in order, in one namespace (they build on each
other), in an empty folder, offline — so the documented API cannot drift from the real one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


@pytest.mark.slow
def test_every_python_example_of_docs_api_md_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LVU_RESULTS_DIR", raising=False)
    monkeypatch.setenv("LVU_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LVU_OFFLINE", "1")
    blocks = python_blocks(DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 9  # one per entry point, at least
    namespace: dict[str, object] = {"__name__": "docs_api"}
    for i, block in enumerate(blocks, start=1):
        try:
            exec(compile(block, f"{DOC.name} block {i}", "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"docs/api.md python block {i} fails: {e!r}\n{block}") from e
    assert (tmp_path / "lvu-results" / "lvu.sqlite").is_file() and (tmp_path / "haystack-clean").is_dir()
    assert "complete" in capsys.readouterr().out


def test_the_blocks_are_found():
    assert python_blocks("x\n```python\na = 1\n```\n```text\nno\n```\n```python\nb = 2\n```\n") == ["a = 1\n", "b = 2\n"]


def test_the_readme_from_python_example_runs(tmp_path, monkeypatch, capsys):
    """README "From Python": the block a newcomer pastes first runs and prints the run's records."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LVU_RESULTS_DIR", raising=False)
    readme = (DOC.parents[1] / "README.md").read_text(encoding="utf-8")
    block = next(b for b in python_blocks(readme) if b.startswith("import lvu"))
    exec(compile(block, "README.md From Python", "exec"), {"__name__": "readme"})
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("partial [(") and last.count("True") + last.count("False") == 4, last
