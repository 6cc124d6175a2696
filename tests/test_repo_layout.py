"""The repository keeps every source file: no .gitignore pattern may swallow a path under src/."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_no_path_under_src_is_git_ignored():
    # `build/` once matched src/lvu/build/ (the construction package, now lvu.construct): it would never be committed.
    probes = [p.relative_to(ROOT).as_posix() for p in (ROOT / "src").rglob("*.py")]
    probes += ["src/lvu/construct/__init__.py", "src/lvu/build/stages.py", "src/lvu/dist/x.py", "src/lvu/results/x.py"]
    out = subprocess.run(["git", "check-ignore", "--no-index", *probes], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 1 and out.stdout == "", f"ignored by .gitignore: {out.stdout}"


def test_no_source_folder_is_named_like_generated_output():
    # Tools skip folders named build/dist (ruff's default exclude, .gitignore templates, structure
    # viewers): the construction half lives in lvu.construct so every tool sees it.
    generated = {"build", "dist", "out", "target"}
    found = [p.relative_to(ROOT).as_posix() for p in (ROOT / "src").rglob("*") if p.is_dir() and p.name in generated]
    assert found == [], f"source folders named like generated output: {found}"
